import NIOCore
import ReplayModel

/// One event of an atomic send.
public struct AtomicEvent: Sendable, Equatable {
    public var stream: String
    public var payload: ByteBuffer
    /// The stream's expected last sequence number before this event.
    public var expect: UInt64?
    /// The publisher's trace context (`trace=`), stored with the event.
    public var traceParent: TraceParent?
    /// The event's key (`key=`), stored with it.
    public var key: EventKey?
    /// How long the event lives (`ttl=`); `nil`: its stream's default.
    public var ttl: EventTTL?

    public init(
        stream: String, payload: ByteBuffer, expect: UInt64? = nil, traceParent: TraceParent? = nil, key: EventKey? = nil,
        ttl: EventTTL? = nil
    ) {
        self.ttl = ttl
        self.stream = stream
        self.payload = payload
        self.expect = expect
        self.traceParent = traceParent
        self.key = key
    }
}
