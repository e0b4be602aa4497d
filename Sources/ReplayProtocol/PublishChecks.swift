import NIOCore

/// What a `PUB` may ask beyond "append" (`expect=`, `producer= epoch= pseq=`), and one
/// event of an `ATOMIC` send. See docs/PROTOCOL.md.
public struct PublishChecks: Sendable, Equatable {
    /// Commit only if the stream's last sequence number is this (0: empty or new).
    public var expect: UInt64?
    /// An idempotent producer's stamp.
    public var producer: Producer?

    public struct Producer: Sendable, Equatable {
        public var id: String
        public var epoch: UInt64
        public var pseq: UInt64

        public init(id: String, epoch: UInt64, pseq: UInt64) {
            self.id = id
            self.epoch = epoch
            self.pseq = pseq
        }
    }

    public init(expect: UInt64? = nil, producer: Producer? = nil) {
        self.expect = expect
        self.producer = producer
    }
}

/// One event of an atomic send.
public struct AtomicEvent: Sendable, Equatable {
    public var stream: String
    public var payload: ByteBuffer
    /// The stream's expected last sequence number before this event.
    public var expect: UInt64?

    public init(stream: String, payload: ByteBuffer, expect: UInt64? = nil) {
        self.stream = stream
        self.payload = payload
        self.expect = expect
    }
}
