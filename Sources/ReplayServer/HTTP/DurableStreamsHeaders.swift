import HTTPTypes

/// The Durable Streams protocol's headers (Durable Streams PROTOCOL.md §13.2), and replay's own extension.
extension HTTPField.Name {
    static let streamNextOffset = Self("Stream-Next-Offset")!
    static let streamUpToDate = Self("Stream-Up-To-Date")!
    static let streamClosed = Self("Stream-Closed")!
    static let streamCursor = Self("Stream-Cursor")!
    static let streamSeq = Self("Stream-Seq")!
    static let streamTTL = Self("Stream-TTL")!
    static let streamExpiresAt = Self("Stream-Expires-At")!
    static let streamSSEDataEncoding = Self("Stream-SSE-Data-Encoding")!
    static let streamForkedFrom = Self("Stream-Forked-From")!
    static let streamForkOffset = Self("Stream-Fork-Offset")!
    static let streamForkSubOffset = Self("Stream-Fork-Sub-Offset")!
    static let producerID = Self("Producer-Id")!
    static let producerEpoch = Self("Producer-Epoch")!
    static let producerSeq = Self("Producer-Seq")!
    static let producerExpectedSeq = Self("Producer-Expected-Seq")!
    static let producerReceivedSeq = Self("Producer-Received-Seq")!
    /// replay's extension: a stream that ended with a failure is closed, and says why.
    static let replayFailure = Self("Replay-Stream-Failed")!
    /// replay's extension: the most events a stream keeps (on PUT, asked; on HEAD, told).
    static let replayMaxEvents = Self("Replay-Max-Events")!
    /// A read's traced events and their trace contexts (`StreamEndpoint.addTraces`).
    static let replayTraceparent = Self("Replay-Traceparent")!
    /// A POST's key for each of its events (`Replay-Key: customer-7`); a read's keyed events
    /// and their keys, for a reader that asked (`?keys=on`, `StreamEndpoint.addAnnotations`).
    static let replayKey = Self("Replay-Key")!
    /// replay's extension: the hash-chain link of a read's last event (the one its
    /// `Stream-Next-Offset` is after), to compare with a signed checkpoint of it.
    static let replayChainHash = Self("Replay-Chain-Hash")!
    /// replay's extension: a scheduled POST (`Replay-Delay: 30` seconds, or `Replay-At:
    /// 2026-12-01T09:00:00Z`), and its answer's id and due time.
    static let replayDelay = Self("Replay-Delay")!
    static let replayAt = Self("Replay-At")!
    static let replayScheduledID = Self("Replay-Scheduled-Id")!
    static let replayDue = Self("Replay-Due")!
    /// replay's extension: how long a POST's events live (`Replay-TTL: 30` seconds), and a
    /// stream's default for events that do not say (on PUT, asked; on HEAD, told).
    static let replayTTL = Self("Replay-TTL")!
    static let replayEventTTL = Self("Replay-Event-TTL")!
    static let replayCompact = Self("Replay-Compact")!
    static let replayTombstoneRetention = Self("Replay-Tombstone-Retention")!
    /// A key's current value (`?key=`): the sequence number of the event it is.
    static let replaySeq = Self("Replay-Seq")!
    /// W3C Trace Context: a POST's, stored with its events; a webhook's, sent with it.
    static let traceparent = Self("traceparent")!
    /// replay's extension: how many streams a `GET /v1/streams` query matched in all.
    static let replayStreamCount = Self("Replay-Stream-Count")!
    static let crossOriginResourcePolicy = Self("Cross-Origin-Resource-Policy")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let accessControlExposeHeaders = Self("Access-Control-Expose-Headers")!
}
