import Foundation

/// One output of a derivation, with the input event that produced it: what the operators
/// make (ReplayDerive), what the writer stores with its origin (ReplayStore), one type.
public struct DerivedOutput: Sendable, Equatable {
    public let payload: Data
    public let originStream: String
    public let originSequence: UInt64
    /// The trace context of the input event that produced it: the output continues its
    /// publisher's trace.
    public let traceParent: TraceParent?
    /// Its key: the input event's for a map, filter or flattenMap (a keyed stream's view
    /// stays keyed), the scan key's for a keyed scan, none otherwise.
    public let key: EventKey?

    public init(payload: Data, originStream: String, originSequence: UInt64, traceParent: TraceParent? = nil, key: EventKey? = nil) {
        self.payload = payload
        self.originStream = originStream
        self.originSequence = originSequence
        self.traceParent = traceParent
        self.key = key
    }

    /// The origin as the store's column keeps it: `stream:seq` (a stream name never has a ':').
    public var origin: String { "\(originStream):\(originSequence)" }
}
