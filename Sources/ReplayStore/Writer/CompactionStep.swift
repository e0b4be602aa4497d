/// One of a stream's events as compaction judges it (`WriterRules.compact`): its key, and
/// whether it is a tombstone (a keyed event with an empty payload) and how old.
struct CompactionRow {
    let sequence: UInt64
    /// As stored; compaction compares keys, it does not hand them on.
    let key: String?
    let size: Int
    /// Its commit time (ms since 1970).
    let millis: Int64
}

/// What one compaction batch did, and where the pass goes on: a pass walks a compacted
/// stream from its first event to where it ended when the pass began (`through`), a batch
/// (a writer transaction of a few milliseconds) at a time, so that publishes go on between
/// them.
public struct CompactionStep: Sendable, Equatable {
    /// Where the next batch of this pass starts; `nil`: the pass is done.
    public var next: UInt64?
    /// The last event the pass looks at: the stream's end when it began, or before the
    /// first event a durable consumer or a group has not passed yet.
    public var through: UInt64
    /// Events this batch removed.
    public var removed: Int
    /// The earliest time (ms) a tombstone this batch kept will be old enough to go.
    public var tombstoneDue: Int64?

    public init(next: UInt64?, through: UInt64, removed: Int, tombstoneDue: Int64?) {
        self.next = next
        self.through = through
        self.removed = removed
        self.tombstoneDue = tombstoneDue
    }
}
