/// One of a stream's events as compaction judges it: which event is its key's newest, and
/// whether it is a tombstone (a keyed event with an empty payload) and how old.
struct CompactionRow {
    let sequence: UInt64
    /// The sequence number of its key's newest event (`nil` without a key).
    let newest: UInt64?
    let size: Int
    /// Its commit time (ms since 1970).
    let millis: Int64
}

/// What compaction removes of a page of a stream's events, read beside the writer, as the
/// writer's steps: runs of events that may go (a run spans the holes between its events),
/// at most `eventsPerStep` events and `runsPerStep` runs a step, so that each step holds
/// the writer for about a millisecond.
///
/// An event may go when a newer event of its key superseded it, or when it is its key's
/// newest and a tombstone older than the retention. What is never judged here: an event
/// without a key (it stays), and the readers' floor (the writer cuts each step to it).
struct CompactionPlan {
    /// The writer's steps, in sequence order.
    private(set) var steps: [[ClosedRange<UInt64>]] = []
    /// The earliest time (ms) a tombstone this page kept will be old enough to go.
    private(set) var tombstoneDue: Int64?

    init(_ rows: [CompactionRow], now: Int64, tombstoneRetention: Int64, eventsPerStep: Int, runsPerStep: Int) {
        var step: [ClosedRange<UInt64>] = []
        var events = 0
        var open: ClosedRange<UInt64>?
        func closeRun() {
            if let run = open { step.append(run) }
            open = nil
        }
        func closeStep() {
            closeRun()
            if !step.isEmpty { steps.append(step) }
            (step, events) = ([], 0)
        }
        for row in rows {
            guard let newest = row.newest else {
                closeRun()
                continue
            }
            var removable = row.sequence < newest
            if !removable, row.size == 0 {
                removable = row.millis + tombstoneRetention <= now
                if !removable { tombstoneDue = min(tombstoneDue ?? .max, row.millis + tombstoneRetention) }
            }
            guard removable else {
                closeRun()
                continue
            }
            if open == nil, step.count == runsPerStep { closeStep() }
            open = (open?.lowerBound ?? row.sequence)...row.sequence
            events += 1
            if events == eventsPerStep { closeStep() }
        }
        closeStep()
    }
}
