/// One consumer group, as GROUPS answers it (JSON).
public struct GroupDescription: Codable, Sendable, Equatable {
    public var name: String
    public var stream: String
    public var ackWait: Double
    public var maxDeliver: Int?
    public var deadLetter: String?
    /// Members connected to this daemon, and members holding events (on any daemon).
    public var members: [String]
    /// Events handed out and not acknowledged.
    public var pending: Int
    /// Events handed out for the first time, again, and given up on.
    public var delivered: UInt64
    public var redelivered: UInt64
    public var deadLettered: UInt64
    /// How long the oldest pending event has been pending (ms since its first delivery);
    /// `nil` when nothing is.
    public var oldestPendingMs: Int64?
    /// The last event handed out for the first time.
    public var deliveredSeq: UInt64
    /// Events committed and never handed out yet.
    public var lag: UInt64

    public init(
        name: String, stream: String, ackWait: Double, maxDeliver: Int?, deadLetter: String?, members: [String], pending: Int,
        delivered: UInt64, redelivered: UInt64, deadLettered: UInt64, oldestPendingMs: Int64?, deliveredSeq: UInt64, lag: UInt64
    ) {
        self.name = name
        self.stream = stream
        self.ackWait = ackWait
        self.maxDeliver = maxDeliver
        self.deadLetter = deadLetter
        self.members = members
        self.pending = pending
        self.delivered = delivered
        self.redelivered = redelivered
        self.deadLettered = deadLettered
        self.oldestPendingMs = oldestPendingMs
        self.deliveredSeq = deliveredSeq
        self.lag = lag
    }

    enum CodingKeys: String, CodingKey {
        case name, stream, members, pending, delivered, redelivered, lag
        case ackWait = "ack_wait"
        case maxDeliver = "max_deliver"
        case deadLetter = "dead_letter"
        case deadLettered = "dead_lettered"
        case oldestPendingMs = "oldest_pending_ms"
        case deliveredSeq = "delivered_seq"
    }
}

/// One pending event of a group, as PENDING answers it (JSON).
public struct PendingDescription: Codable, Sendable, Equatable {
    public var stream: String
    public var seq: UInt64
    /// Who holds it; `nil` while it waits to be handed out again.
    public var member: String?
    public var lastMember: String
    public var deliveries: Int
    /// Since it was last handed out (ms).
    public var idleMs: Int64

    public init(stream: String, seq: UInt64, member: String?, lastMember: String, deliveries: Int, idleMs: Int64) {
        self.stream = stream
        self.seq = seq
        self.member = member
        self.lastMember = lastMember
        self.deliveries = deliveries
        self.idleMs = idleMs
    }

    enum CodingKeys: String, CodingKey {
        case stream, seq, member, deliveries
        case lastMember = "last_member"
        case idleMs = "idle_ms"
    }
}
