/// Where a dead letter came from: kept beside its copy in the dead-letter stream, so that
/// `replayctl` and `sqlite3` can say which event of which stream failed, in which group,
/// how many times, and who had it last.
public struct DeadLetter: Sendable, Equatable {
    /// The dead-letter stream and the copy's sequence number in it.
    public let stream: String
    public let sequence: UInt64
    public let origin: String
    public let originSequence: UInt64
    public let group: String
    public let deliveries: Int
    public let lastMember: String
    /// ms since 1970.
    public let time: Int64
}
