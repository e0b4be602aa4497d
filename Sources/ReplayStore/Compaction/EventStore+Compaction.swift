import Dispatch
import ReplayModel

/// Key compaction's passes: a compacted stream's events are read a page at a time beside
/// the writer (on a reader connection, on a thread of their own), judged there
/// (`CompactionPlan`), and what may go is removed by the writer in short steps
/// (`WriterRules.removeCompacted`), each its own transaction, so that publishes go on
/// between them and no commit grows long with compaction.
extension EventStore {
    /// What a whole pass over a compacted stream did.
    public struct CompactionPass: Sendable, Equatable {
        /// The last event it looked at: the stream's end when it began, or before the first
        /// event a durable consumer or a group had not passed.
        public var through: UInt64
        public var removed: Int
        /// The earliest time (ms) a tombstone it kept will be old enough to go; `nil`: none
        /// kept.
        public var tombstoneDue: Int64?
    }

    /// Events a page reads at most: about 2 ms of a reader's time.
    static var compactionRowsPerPage: Int { 4_096 }
    /// Events one writer step removes at most, and runs (between events that stay): about a
    /// millisecond of the writer's time, fsync included (docs/PERFORMANCE.md, "Key compaction").
    static var compactionEventsPerStep: Int { 512 }
    static var compactionRunsPerStep: Int { 64 }

    /// The last event of a compacted stream a pass may look at now (`nil`: no such stream):
    /// its end, or before the first event a durable consumer or a group has not passed.
    public func compactionEnd(of stream: String) -> UInt64? {
        catalog[stream]?.compactionEnd
    }

    /// A whole pass over `stream`, from its first event to where it ended when the pass
    /// began (or its readers' floor then). With a `pacing` above 0, after each read and each
    /// step the pass waits that many times as long as the work took, so that compaction
    /// takes at most `1 / (1 + pacing)` of the writer's time and of a core.
    public func compact(_ stream: String, pacing: Double = 0) async throws(StoreError) -> CompactionPass {
        guard let record = catalog[stream] else { throw .unknownStream(stream) }
        guard let compaction = record.info.config.compaction else {
            return CompactionPass(through: record.info.lastSequence, removed: 0, tombstoneDue: nil)
        }
        var pass = CompactionPass(through: record.compactionEnd, removed: 0, tombstoneDue: nil)
        var from: UInt64 = 0
        var worked = ContinuousClock.now
        func pace() async {
            guard pacing > 0 else { return }
            try? await Task.sleep(for: (ContinuousClock.now - worked) * pacing)
            worked = ContinuousClock.now
        }
        while let current = catalog[stream] {
            // A fork's inherited events are its source's rows: the source compacts them.
            let start = max(from, current.info.firstSequence, (current.info.fork?.sequence ?? 0) + 1)
            guard start <= pass.through else { break }
            let through = pass.through
            let rows = try await Self.beside { [log] () throws(StoreError) in
                try log.compactionRows(of: current.id, from: start, through: through, limit: Self.compactionRowsPerPage)
            }
            await pace()
            let plan = CompactionPlan(
                rows, now: Timestamp.millis(clock()), tombstoneRetention: Int64(compaction.tombstoneRetention * 1000),
                eventsPerStep: Self.compactionEventsPerStep, runsPerStep: Self.compactionRunsPerStep)
            for step in plan.steps {
                pass.removed += try await bridge { done in writer.submit(.removeCompacted(stream: stream, runs: step, finishesPass: false, done)) }
                await pace()
            }
            if let due = plan.tombstoneDue { pass.tombstoneDue = min(pass.tombstoneDue ?? .max, due) }
            guard rows.count == Self.compactionRowsPerPage, let last = rows.last else { break }
            from = last.sequence + 1
        }
        _ = try await bridge { done in writer.submit(.removeCompacted(stream: stream, runs: [], finishesPass: true, done)) }
        return pass
    }

    /// Compaction's reads, on a thread of their own: never on the cooperative pool, and
    /// never two at once.
    private static let readQueue = DispatchQueue(label: "replay.compaction")

    private static func beside<T: Sendable>(_ read: @escaping @Sendable () throws(StoreError) -> T) async throws(StoreError) -> T {
        let result: Result<T, StoreError> = await withCheckedContinuation { continuation in
            readQueue.async {
                continuation.resume(returning: Result { () throws(StoreError) in try read() })
            }
        }
        return try result.get()
    }
}
