import ReplayModel

/// One Durable Streams subscription, as SUBSCRIPTIONS answers it (JSON): what it follows,
/// how it wakes its workers, where its wake and lease stand, and its position in each
/// linked stream.
public struct SubscriptionDescription: Codable, Sendable, Equatable {
    /// A linked stream: the subscription's acknowledged position in it, and what is left.
    public struct Link: Codable, Sendable, Equatable {
        public var stream: String
        /// `explicit` (named by the subscription) or `glob` (matched by its pattern).
        public var link: String
        public var ackedSeq: UInt64
        public var lastSeq: UInt64
        public var lag: UInt64

        public init(stream: String, link: String, ackedSeq: UInt64, lastSeq: UInt64) {
            self.stream = stream
            self.link = link
            self.ackedSeq = ackedSeq
            self.lastSeq = lastSeq
            self.lag = ReplayModel.lag(last: lastSeq, position: ackedSeq)
        }

        enum CodingKeys: String, CodingKey {
            case stream, link, lag
            case ackedSeq = "acked_seq"
            case lastSeq = "last_seq"
        }
    }

    public var id: String
    /// `webhook` or `pull-wake`.
    public var type: String
    public var pattern: String?
    public var webhookURL: String?
    public var wakeStream: String?
    public var leaseTTLMs: Int
    /// `active`, or `failed` while a webhook delivery is being retried.
    public var status: String
    public var generation: Int
    /// The outstanding wake, its holder, and when the holder's lease ends (ISO 8601).
    public var wakeID: String?
    public var holder: String?
    public var leaseUntil: String?
    /// Failed webhook deliveries in a row.
    public var failures: Int
    public var streams: [Link]

    public init(
        id: String, type: String, pattern: String?, webhookURL: String?, wakeStream: String?, leaseTTLMs: Int, status: String,
        generation: Int, wakeID: String?, holder: String?, leaseUntil: String?, failures: Int, streams: [Link]
    ) {
        self.id = id
        self.type = type
        self.pattern = pattern
        self.webhookURL = webhookURL
        self.wakeStream = wakeStream
        self.leaseTTLMs = leaseTTLMs
        self.status = status
        self.generation = generation
        self.wakeID = wakeID
        self.holder = holder
        self.leaseUntil = leaseUntil
        self.failures = failures
        self.streams = streams
    }

    enum CodingKeys: String, CodingKey {
        case id, type, pattern, status, generation, holder, failures, streams
        case webhookURL = "webhook_url"
        case wakeStream = "wake_stream"
        case leaseTTLMs = "lease_ttl_ms"
        case wakeID = "wake_id"
        case leaseUntil = "lease_until"
    }
}
