/// What one committed transaction changed, as told to commit listeners: per stream, its
/// metadata after the commit and the events it gained (in sequence order). Listeners learn
/// of events only once they are durable, so nothing they pass on can vanish in a crash.
public struct CommitBatch: Sendable {
    public struct Change: Sendable {
        /// The stream after the commit; `nil` if it was deleted.
        public let info: StreamInfo?
        /// The events appended by this commit, oldest first. Present even for a stream of
        /// capacity 0, whose events are delivered live but never kept.
        public let appended: [StoredEvent]
    }

    public let changes: [String: Change]
}
