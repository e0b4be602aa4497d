import Foundation
import ReplayModel

/// One event of an atomic send: all of a send's events commit together or none does,
/// contiguous in each stream.
public struct AtomicAppend: Sendable, Equatable {
    public var stream: String
    public var payload: Data
    /// As `AppendConditions.expectedLastSequence`, checked against the stream as the
    /// send's earlier events left it.
    public var expectedLastSequence: UInt64?
    /// The publisher's trace context, stored with the event.
    public var traceParent: TraceParent?
    /// The event's key, stored with it.
    public var key: EventKey?
    /// How long the event lives; `nil`: its stream's default.
    public var ttl: EventTTL?

    public init(
        stream: String, payload: Data, expectedLastSequence: UInt64? = nil, traceParent: TraceParent? = nil, key: EventKey? = nil,
        ttl: EventTTL? = nil
    ) {
        self.stream = stream
        self.payload = payload
        self.expectedLastSequence = expectedLastSequence
        self.traceParent = traceParent
        self.key = key
        self.ttl = ttl
    }
}
