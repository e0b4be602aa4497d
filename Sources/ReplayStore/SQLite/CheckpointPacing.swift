/// How full the WAL gets before the writer's commit checkpoints it: as full as SQLite's WAL
/// may get here (`mostPages`) while a checkpoint stays within `budget`, sooner when it does
/// not.
///
/// A checkpoint runs inside the commit that fills the WAL, on the writer's thread, and every
/// publish that arrives meanwhile waits for it. Its time is the database file's writes of
/// the distinct pages the WAL holds and their fdatasync, so it depends on what was written:
/// - a work queue rewrites the same few pages in every commit: a checkpoint of 1,000 frames
///   took 0.3 to 1.6 ms, at 5,000 events a second it came every 85 ms, and the events that
///   arrived during one, about one in a hundred, were the p99; at 4,000 frames it comes a
///   quarter as often and copies little more (docs/PERFORMANCE.md, "Work queues");
/// - 100,000 events a second appended (and as many expiring) write new pages all the time,
///   and 4,000 frames were 4,000 pages: 10 to 25 ms on a disk that writes 1 GB/s, in the commits
///   that had them and in the publish p99 (docs/PERFORMANCE.md, "Event expiry").
///
/// No one size serves both, and the second depends on the disk. So each checkpoint's time
/// sets the next one's size: `pages × budget / took`, the pages this disk copies within the
/// budget at the rate it just did; at most a quarter more than the last, since a
/// checkpoint's time varies more than its size does (under expiry at 100,000 events a
/// second, 800 to 3,000 pages all took 3 to 5 ms, and one in twenty 6 to 10), and a quick
/// one is no promise that a larger one will be; within `leastPages...mostPages`.
struct CheckpointPacing: Sendable {
    /// The largest WAL the writer lets grow before a checkpoint, and the size its file is
    /// kept at (`WALFile.workingSize`). 8,000 gave the work queue the same p99; more only
    /// makes the WAL larger (readers search a larger index of it, and a start after a crash
    /// reads up to this much of it).
    static let mostPages = 4_000
    /// The smallest: below it, the checkpoint's own fdatasync, not its pages, is its time.
    static let leastPages = 250
    /// What one checkpoint may add to a commit, on average. One in twenty takes two to
    /// three times its size's usual time, so a commit with one stays under 10 ms with its
    /// batch's own work beside it: under expiry at 100,000 events a second, a budget of
    /// 4 ms left 5 to 10 commits over 10 ms in 2,000,000 events, and 2.5 ms none, with the
    /// same publish p50 and the same rate pipelined (docs/PERFORMANCE.md, "Event expiry").
    static let budget: Duration = .microseconds(2_500)

    /// The WAL frames at which the next commit checkpoints.
    private(set) var pages = Self.mostPages

    /// Whether a commit that left `walFrames` frames in the WAL checkpoints it now.
    func isDue(walFrames: Int) -> Bool {
        walFrames >= pages
    }

    /// A checkpoint that copied frames took `took`: the size of the next one.
    mutating func checkpointed(took: Duration) {
        let ratio = Self.budget / max(took, .microseconds(1))
        let next = (Double(pages) * min(ratio, 1.25)).rounded()
        pages = Int(min(max(next, Double(Self.leastPages)), Double(Self.mostPages)))
    }
}
