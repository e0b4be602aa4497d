import NIOCore

/// Something the server sends. Replies (`ok`, `published`, `error`, `pong`, `info`, `list`)
/// answer commands one for one, in command order; the others arrive for subscriptions at
/// any time between them.
public enum ServerFrame: Sendable, Equatable {
    /// Sent once when a connection opens.
    case hello(version: String, maxPayload: Int)
    case ok
    /// The reply to PUB: the event is committed with this sequence number.
    case published(sequence: UInt64)
    /// The reply to an ATOMIC send of more than one event: each event's sequence number.
    case publishedAll([UInt64])
    case error(ReplayError)
    case pong
    /// The reply to INFO: one stream, as JSON.
    case info(json: ByteBuffer)
    /// The reply to LIST: every stream, as a JSON array.
    case list(json: ByteBuffer)
    /// An event for a subscription. `time` is ISO-8601 UTC; `traceParent` is its
    /// publisher's trace context, if it has one (` trace=` at the end of the line); `hash`
    /// its hash-chain link, 64 hex digits, for a subscription that asked (` hash=`); `key`
    /// its key, if it has one (` key=`).
    case event(
        stream: String, sid: String, sequence: UInt64, time: String, payload: ByteBuffer, traceParent: String? = nil, hash: String? = nil,
        key: String? = nil)
    /// The stream completed after event `lastSequence`; the subscription is over.
    case completed(stream: String, sid: String, lastSequence: UInt64)
    /// The stream failed after event `lastSequence`; the subscription is over.
    case failed(stream: String, sid: String, lastSequence: UInt64, message: String)
    /// Events `from...through` are no longer retained: the subscriber fell behind retention.
    case gap(stream: String, sid: String, from: UInt64, through: UInt64)
    /// The subscription stopped on an error of the server's (`corrupt_event`: the next
    /// event failed its hash chain's check, and is not sent); the stream has not ended.
    /// The subscription is over. `ERROR <stream> <sid> <code> <message>`.
    case subscriptionError(stream: String, sid: String, error: ReplayError)
}
