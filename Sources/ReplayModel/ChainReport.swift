/// What a check of one stream's hash chain found (`VERIFY`, `replayctl verify`): the
/// events it recomputed, and the first one that did not match, if any.
public struct ChainReport: Codable, Sendable, Equatable {
    /// The first event whose stored hash is not its chain's link, or that is missing.
    public struct Break: Codable, Sendable, Equatable {
        public var sequence: UInt64
        /// The hash the chain says the event must have ("an event" where one is missing).
        public var expected: String
        /// The hash stored with it ("none" where there is none).
        public var found: String

        public init(sequence: UInt64, expected: String, found: String) {
            self.sequence = sequence
            self.expected = expected
            self.found = found
        }
    }

    public var stream: String
    /// The first and last sequence numbers checked (0 when there were none).
    public var first: UInt64 = 0
    public var last: UInt64 = 0
    public var events: Int = 0
    /// Payload bytes hashed.
    public var bytes: Int = 0
    public var broken: Break?
    /// The chain's hash after event `last` (what a checkpoint of it would say); `nil`
    /// when no event was checked or the last one was stored before chaining began.
    public var lastHash: String?

    public init(stream: String) {
        self.stream = stream
    }

    public var isIntact: Bool { broken == nil }

    /// Counts one event checked.
    public mutating func checked(_ sequence: UInt64, bytes count: Int) {
        if events == 0 { first = sequence }
        last = sequence
        events += 1
        bytes += count
    }
}
