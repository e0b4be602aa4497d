import ReplayModel

/// Key compaction's passes (`WriterRules.compact`), a writer batch at a time.
extension EventStore {
    /// What a whole pass over a compacted stream did.
    public struct CompactionPass: Sendable, Equatable {
        /// The last event it looked at (see `CompactionStep.through`).
        public var through: UInt64
        public var removed: Int
        /// The earliest time (ms) a tombstone it kept will be old enough to go; `nil`: none
        /// kept.
        public var tombstoneDue: Int64?
    }

    /// The last event of a compacted stream a pass may look at now (`nil`: no such stream):
    /// its end, or before the first event a durable consumer or a group has not passed.
    public func compactionEnd(of stream: String) -> UInt64? {
        catalog[stream]?.compactionEnd
    }

    /// One batch of a pass over `stream`, from `from` on (`through`: `nil` as the pass
    /// begins, then the first batch's answer).
    public func compact(_ stream: String, from: UInt64, through: UInt64?) async throws(StoreError) -> CompactionStep {
        try await bridge { done in writer.submit(.compact(stream: stream, from: from, through: through, done)) }
    }

    /// A whole pass over `stream`: its batches one after another, each a transaction of its
    /// own, publishes going on between them.
    public func compact(_ stream: String) async throws(StoreError) -> CompactionPass {
        var step = try await compact(stream, from: 0, through: nil)
        var pass = CompactionPass(through: step.through, removed: step.removed, tombstoneDue: step.tombstoneDue)
        while let next = step.next {
            step = try await compact(stream, from: next, through: pass.through)
            pass.removed += step.removed
            if let due = step.tombstoneDue { pass.tombstoneDue = min(pass.tombstoneDue ?? .max, due) }
        }
        return pass
    }
}
