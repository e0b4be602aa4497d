import Foundation
import ReplayModel

/// One event received from a stream.
public struct ReplayEvent: Sendable, Equatable {
    public let stream: String
    public let sequence: UInt64
    /// Commit time, ISO-8601 UTC with milliseconds, as stored.
    public let time: String
    public let payload: Data
    /// The trace context its publisher gave, if any: a consumer continues that trace.
    public let traceParent: TraceParent?
    /// Its link in its stream's hash chain, for a subscription that asked (`hashes: true`).
    public let hash: EventHash?
    /// Its key, if its publisher gave one.
    public let key: EventKey?

    public init(
        stream: String, sequence: UInt64, time: String, payload: Data, traceParent: TraceParent? = nil, hash: EventHash? = nil,
        key: EventKey? = nil
    ) {
        self.stream = stream
        self.sequence = sequence
        self.time = time
        self.payload = payload
        self.traceParent = traceParent
        self.hash = hash
        self.key = key
    }

    /// The payload as UTF-8 text, if it is valid UTF-8.
    public var text: String? { String(data: payload, encoding: .utf8) }
}
