import NIOCore

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
