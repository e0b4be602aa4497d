import Foundation
import Hummingbird
import NIOCore
import ReplayModel
import ReplayStore

/// SSE (Durable Streams PROTOCOL.md §5.8): `data` events carry the events (text, or base64 for binary
/// streams), each followed by a `control` event with the next offset; a quiet stream gets a
/// `control` event every long-poll timeout. The response lasts until the client leaves,
/// or `--sse-duration` (about a minute where a CDN collapses readers). Its loop is
/// `SSEReader`'s, the page's tail's too.
extension StreamEndpoint {
    /// `closed`: the connection's close, which ends the response at once (a parked reader
    /// would find it only at its next write).
    func sse(_ start: HTTPCursor, info: StreamInfo, clientCursor: UInt64?, closed: EventLoopFuture<Void>) -> Response {
        let (fields, feed) = eventStream(start, info: info, clientCursor: clientCursor)
        return Response(status: .ok, headers: fields, body: SSEReader.body(feed, parked: parked, closed: closed, lease: leases.lease(info.name)))
    }

    /// An SSE response's fields and its feed, however it is served: in a connection's task
    /// (`SSEReader`) or with no task (`ParkedEventStream`).
    func eventStream(_ start: HTTPCursor, info: StreamInfo, clientCursor: UInt64?) -> (HTTPFields, DurableStreamsFeed) {
        let encoding = SSEFrame.Encoding(info)
        var fields = HTTPFields()
        fields.reserveCapacity(8)
        fields[.contentType] = "text/event-stream"
        fields[.cacheControl] = "no-cache"
        if encoding == .base64 { fields[.streamSSEDataEncoding] = "base64" }
        let feed = DurableStreamsFeed(
            cursor: start, encoding: encoding, clientCursor: clientCursor, keepAlive: settings.longPollTimeout,
            deadline: settings.sseDuration.map { ContinuousClock.now.advanced(by: $0) }, tracer: tracer)
        return (fields, feed)
    }
}

/// The Durable Streams framing of an SSE response: each chunk's events as a `data` event,
/// then a `control` event with the next offset and the cursor.
struct DurableStreamsFeed: SSEFeed {
    var cursor: HTTPCursor
    let encoding: SSEFrame.Encoding
    let clientCursor: UInt64?
    let keepAlive: Duration
    let deadline: ContinuousClock.Instant?
    let tracer: EventTracer
    /// Whether each chunk's text is framed as an HTTP/1.1 chunk (`HTTPChunk`), for a
    /// reader that writes below NIO's HTTP encoder (`ParkedEventStream`).
    var asHTTPChunks = false

    var watched: (hub: StreamHub, after: UInt64) { cursor.watched }

    /// Gone or deleted mid-stream: `nil`, and the client's reconnect gets the status.
    @inline(never)
    mutating func next() async -> (ByteBuffer, SSENext)? {
        await next(continuing: HTTPCursor.Partial())
    }

    /// The next chunk's text, begun from the hub's memory (`nextFromMemory`).
    @inline(never)
    mutating func next(continuing partial: HTTPCursor.Partial) async -> (ByteBuffer, SSENext)? {
        guard let chunk = try? await cursor.chunk(continuing: partial) else { return nil }
        return frame(chunk)
    }

    /// What `nextFromMemory` found.
    enum FromMemory {
        case framed(ByteBuffer, SSENext)
        /// The stream is gone or deleted.
        case gone
        /// The store must finish the chunk (`next(continuing:)`).
        case partial(HTTPCursor.Partial)
    }

    /// The next chunk's text if the hub's memory holds it, without an async call; the text
    /// another reader at the same position framed, if `frames` holds it.
    mutating func nextFromMemory(sharing frames: inout SharedFrames) -> FromMemory {
        let streamCursor = LiveCursor.next(after: clientCursor)
        let hub = cursor.watched.hub
        let key = SharedFrames.Key(encoding: encoding, streamCursor: streamCursor, asHTTPChunk: asHTTPChunks)
        let version = cursor.sharesChunks ? hub.sharedVersion : nil
        let after = cursor.position
        if let version, let frame = frames.frame(of: hub, after: after, key: key, version: version) {
            cursor.skip(frame)
            return .framed(frame.buffer, following(upToDate: true, closed: false))
        }
        let chunk: HTTPCursor.Chunk
        do {
            switch try cursor.chunkFromMemory() {
            case .chunk(let read): chunk = read
            case .partial(let partial): return .partial(partial)
            }
        } catch {
            return .gone
        }
        let (buffer, next) = frame(chunk, streamCursor: streamCursor)
        if let version, chunk.upToDate, chunk.terminal == nil, chunk.annotated.isEmpty {
            frames.keep(
                SharedFrames.Frame(
                    hub: hub, key: key, after: after, through: cursor.position, version: version, buffer: buffer, events: chunk.sizes.count,
                    bytes: chunk.bytes.readableBytes))
        }
        return .framed(buffer, next)
    }

    /// The chunk's events, and what comes after them. `streamCursor`: the `control`
    /// event's, by default the next for the client's.
    @inline(never)
    private func frame(_ chunk: HTTPCursor.Chunk, streamCursor: UInt64? = nil) -> (ByteBuffer, SSENext) {
        let streamCursor = streamCursor ?? LiveCursor.next(after: clientCursor)
        var buffer = ByteBuffer()
        if asHTTPChunks {
            buffer = HTTPChunk.framing { frame(chunk, streamCursor: streamCursor, into: &$0) }
        } else {
            frame(chunk, streamCursor: streamCursor, into: &buffer)
        }
        return (buffer, following(upToDate: chunk.upToDate, closed: chunk.terminal != nil))
    }

    private func frame(_ chunk: HTTPCursor.Chunk, streamCursor: UInt64, into buffer: inout ByteBuffer) {
        if !chunk.isEmpty { SSEFrame.data(chunk, encoding, into: &buffer) }
        if !chunk.annotated.isEmpty {
            SSEFrame.annotations(chunk.annotated, into: &buffer)
            tracer.delivered(chunk.annotated, of: cursor.watched.hub.name)
        }
        let closed = chunk.terminal != nil
        SSEFrame.control(
            next: cursor.position, cursor: closed ? nil : streamCursor, upToDate: chunk.upToDate, closed: closed,
            hash: chunk.hash(endingAt: cursor.position), into: &buffer)
    }

    /// What follows a chunk. Quiet: after `keepAlive` with no commit, the next round
    /// writes a `control` event with nothing before it (as the reference server does), which
    /// keeps proxies that cut idle connections from cutting this one.
    private func following(upToDate: Bool, closed: Bool) -> SSENext {
        if closed { return .end }
        guard upToDate else { return .read }
        guard let deadline else { return .wait(keepAlive) }
        let remaining = deadline - ContinuousClock.now
        return remaining <= .zero ? .end : .wait(min(keepAlive, remaining))
    }
}

/// The text of SSE events.
enum SSEFrame {
    /// How a stream's events are written in `data` events, by its content type.
    enum Encoding {
        case json
        case text
        case base64

        init(_ info: StreamInfo) {
            self = info.isJSON ? .json : info.isText ? .text : .base64
        }
    }

    /// One `data` event: JSON messages as one array, text as its lines, binary as base64.
    static func data(_ chunk: HTTPCursor.Chunk, _ encoding: Encoding, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("event: data\n")
        switch encoding {
        case .json:
            buffer.writeStaticString("data:[\n")
            let payloads = chunk.payloads
            for (index, payload) in payloads.enumerated() {
                // An empty message (a key's tombstone) has no JSON form: it reads as null.
                writeLines(payload.readableBytes == 0 ? ByteBuffer(string: "null") : payload, suffix: index < payloads.count - 1 ? "," : "", into: &buffer)
            }
            buffer.writeStaticString("data:]\n")
        case .text:
            writeLines(chunk.bytes, suffix: "", into: &buffer)
        case .base64:
            buffer.writeStaticString("data:")
            buffer.writeString(Data(chunk.bytes.readableBytesView).base64EncodedString())
            buffer.writeStaticString("\n")
        }
        buffer.writeStaticString("\n")
    }

    /// Each line of `text` as a `data:` line: CR, LF and CRLF all end a line in SSE, so a
    /// payload's line breaks become separate `data:` lines, which the client joins with LF.
    /// `suffix` ends the last line. (Scanned through its bytes' pointer: through
    /// `ByteBufferView`'s index, the scan was a tenth of a reader's CPU.)
    private static func writeLines(_ text: ByteBuffer, suffix: StaticString, into buffer: inout ByteBuffer) {
        text.withUnsafeReadableBytes { bytes in
            var lineStart = 0
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0x0A || byte == 0x0D {
                    writeLine(UnsafeRawBufferPointer(rebasing: bytes[lineStart..<index]), suffix: "", into: &buffer)
                    if byte == 0x0D, index + 1 < bytes.count, bytes[index + 1] == 0x0A { index += 1 }
                    lineStart = index + 1
                }
                index += 1
            }
            writeLine(UnsafeRawBufferPointer(rebasing: bytes[lineStart...]), suffix: suffix, into: &buffer)
        }
    }

    private static func writeLine(_ line: UnsafeRawBufferPointer, suffix: StaticString, into buffer: inout ByteBuffer) {
        // SSE drops one space after "data:": a line that starts with one gets another.
        if line.first == 0x20 { buffer.writeStaticString("data: ") } else { buffer.writeStaticString("data:") }
        buffer.writeBytes(line)
        buffer.writeStaticString(suffix)
        buffer.writeStaticString("\n")
    }

    /// A `traceparents` event after a `data` event with traced events in it, and a `keys`
    /// event after one with keyed events in it for a reader that asked (`keys=on`), both
    /// extensions: clients that do not know them skip them, as SSE has them skip any event
    /// they do not listen for. Each is a JSON array of each event's message index in the
    /// `data` event (from 0), sequence number, and trace context or key.
    static func annotations(_ annotated: [HTTPCursor.AnnotatedMessage], into buffer: inout ByteBuffer) {
        let traces = annotated.compactMap { message in
            message.traceParent.map { "{\"index\":\(message.index),\"seq\":\(message.sequence),\"traceparent\":\"\($0)\"}" }
        }
        if !traces.isEmpty { buffer.writeString("event: traceparents\ndata:[\(traces.joined(separator: ","))]\n\n") }
        let keys = annotated.compactMap { message in
            message.key.map { "{\"index\":\(message.index),\"seq\":\(message.sequence),\"key\":\(JSONText.of($0))}" }
        }
        if !keys.isEmpty { buffer.writeString("event: keys\ndata:[\(keys.joined(separator: ","))]\n\n") }
    }

    /// The `control` event after a chunk. `hash`: the hash-chain link of the chunk's last
    /// event (the one `streamNextOffset` is after), as `replayChainHash`, an extension field
    /// that clients which do not know it skip, as they do a JSON object's unknown keys.
    static func control(next: UInt64, cursor: UInt64?, upToDate: Bool, closed: Bool, hash: EventHash?, into buffer: inout ByteBuffer) {
        var json = "{\"streamNextOffset\":\"\(StreamOffset.text(after: next))\""
        if let cursor { json += ",\"streamCursor\":\"\(cursor)\"" }
        if let hash { json += ",\"replayChainHash\":\"\(hash.hex)\"" }
        if upToDate || closed { json += ",\"upToDate\":true" }
        if closed { json += ",\"streamClosed\":true" }
        json += "}"
        buffer.writeString("event: control\ndata:\(json)\n\n")
    }
}
