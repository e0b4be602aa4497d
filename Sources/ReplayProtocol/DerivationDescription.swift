/// One derived stream's derivation, as DERIVATIONS and INFO answer it (JSON): what it
/// reads and computes, how far behind its inputs it is, and how it fares.
public struct DerivationDescription: Codable, Sendable, Equatable {
    /// Where a derivation stands.
    public enum Status: String, Codable, Sendable {
        /// Computing (or idle, caught up, until its inputs get events).
        case running
        /// lazy or refcount, waiting for a subscriber.
        case waiting
        /// Another daemon sharing the database computes it; this one takes over if it dies.
        case standby
        /// Stopped by an error (`on_error=stop`; `error` says which), until redefined.
        case stopped
        /// The derived stream ended (take, takeUntil, its inputs' end).
        case completed
    }

    public var stream: String
    public var inputs: [String]
    public var program: String
    public var scan: String?
    public var connect: String
    public var onError: String
    public var status: Status
    /// Input events committed and not yet computed, over every input.
    public var lag: UInt64
    /// Each input's last sequence number computed.
    public var positions: [String: UInt64]
    public var processed: UInt64
    public var errors: UInt64
    public var error: String?
    /// Input events computed per second, over the last few seconds.
    public var rate: Double
    /// The operators' stored state, in bytes of JSON.
    public var stateBytes: Int
    /// The derived stream's last sequence number.
    public var lastSeq: UInt64

    public init(
        stream: String, inputs: [String], program: String, scan: String?, connect: String, onError: String, status: Status, lag: UInt64,
        positions: [String: UInt64], processed: UInt64, errors: UInt64, error: String?, rate: Double, stateBytes: Int, lastSeq: UInt64
    ) {
        self.stream = stream
        self.inputs = inputs
        self.program = program
        self.scan = scan
        self.connect = connect
        self.onError = onError
        self.status = status
        self.lag = lag
        self.positions = positions
        self.processed = processed
        self.errors = errors
        self.error = error
        self.rate = rate
        self.stateBytes = stateBytes
        self.lastSeq = lastSeq
    }

    enum CodingKeys: String, CodingKey {
        case stream, inputs, program, scan, connect, status, lag, positions, processed, errors, error, rate
        case onError = "on_error"
        case stateBytes = "state_bytes"
        case lastSeq = "last_seq"
    }
}
