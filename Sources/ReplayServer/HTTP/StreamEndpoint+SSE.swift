import Foundation
import Hummingbird
import NIOCore
import ReplayCore
import ReplayStore

/// SSE (Durable Streams PROTOCOL.md §5.8): `data` events carry the events (text, or base64 for binary
/// streams), each followed by a `control` event with the next offset; a quiet stream gets a
/// `control` event every long-poll timeout. The response lasts until the client leaves,
/// or `--sse-duration` (about a minute where a CDN collapses readers). The response is a
/// cursor: a chunk is written, and the next is read only once the write is done, so a
/// reader that stalls holds its position and nothing else.
extension StreamEndpoint {
    /// `closed`: the connection's close, which ends the response at once (a parked reader
    /// would find it only at its next write).
    func sse(_ start: HTTPCursor, info: StreamInfo, clientCursor: UInt64?, closed: EventLoopFuture<Void>) -> Response {
        let encoding = SSEFrame.Encoding(info)
        var fields = HTTPFields()
        fields[.contentType] = "text/event-stream"
        fields[.cacheControl] = "no-cache"
        if encoding == .base64 { fields[.streamSSEDataEncoding] = "base64" }
        // Unchecked: the reader is this response's alone, and its body runs once, in the
        // connection's task. Made here rather than in the body, so that the body's closure
        // holds a reference rather than a copy of what the reader holds.
        nonisolated(unsafe) let reader = SSEReader(
            cursor: start, encoding: encoding, clientCursor: clientCursor, keepAlive: settings.longPollTimeout,
            deadline: settings.sseDuration.map { ContinuousClock.now.advanced(by: $0) }, parked: parked, closed: closed,
            lease: leases.lease(info.name))
        let body = ResponseBody { writer in try await reader.run(writing: &writer) }
        return Response(status: .ok, headers: fields, body: body)
    }
}

/// One SSE response's loop: a chunk read, its events written, then a wait while the
/// stream is quiet.
///
/// A class, and its loop never inlined, so that the loop's async frame holds a reference
/// and what crosses its waits, and the reader's state sits on the heap at its own size; what
/// the loop does between waits is plain functions the compiler is told not to inline. A
/// reader's connection task keeps, for as long as the reader is connected, the slabs of
/// the deepest call it has made, so each frame on this path counts once per reader (the
/// loop's was 1,424 bytes as a closure with the framing inline).
final class SSEReader {
    private var cursor: HTTPCursor
    private let encoding: SSEFrame.Encoding
    private let clientCursor: UInt64?
    private let keepAlive: Duration
    private let deadline: ContinuousClock.Instant?
    private let parked: ParkedReads
    private let interrupt = WaitInterrupt()
    /// Held while the reader reads (and released by `deinit` if its body never ran): a lazy
    /// derivation or source connects, a refcount one runs while the reader stays.
    private let lease: any Disposable

    init(
        cursor: HTTPCursor, encoding: SSEFrame.Encoding, clientCursor: UInt64?, keepAlive: Duration, deadline: ContinuousClock.Instant?,
        parked: ParkedReads, closed: EventLoopFuture<Void>, lease: any Disposable
    ) {
        let interrupt = self.interrupt
        closed.whenComplete { _ in interrupt.fire() }
        self.cursor = cursor
        self.encoding = encoding
        self.clientCursor = clientCursor
        self.keepAlive = keepAlive
        self.parked = parked
        self.deadline = deadline
        self.lease = lease
    }

    deinit { lease.dispose() }

    /// What follows a chunk written.
    enum Next {
        case read
        case wait(Duration)
        case end
    }

    @inline(never)
    func run(writing writer: inout any ResponseBodyWriter) async throws {
        Self.count(+1)
        defer {
            Self.count(-1)
            lease.dispose()
        }
        while !Task.isCancelled {
            // Gone or deleted mid-stream: end; the client's reconnect gets the status.
            guard let (buffer, next) = await read() else { break }
            try await writer.write(buffer)
            if case .wait(let wait) = next {
                let outcome = await LiveWait.wait(on: cursor.watched, timeout: wait, parked: parked, interrupt: interrupt)
                if outcome == .shuttingDown || outcome == .connectionClosed { break }
            } else if case .end = next {
                break
            }
        }
        try await writer.finish(nil)
    }

    /// The next chunk's events and what follows them, or `nil` when the stream is gone.
    @inline(never)
    private func read() async -> (ByteBuffer, Next)? {
        guard let chunk = try? await cursor.chunk() else { return nil }
        return frame(chunk)
    }

    /// The readers connected (`replay_http_sse_readers`).
    @inline(never)
    private static func count(_ change: Int) {
        if change > 0 { DaemonMetrics.sseReaders.increment() } else { DaemonMetrics.sseReaders.decrement() }
    }

    /// The chunk's events, and what comes after them. Quiet: after `keepAlive` with no
    /// commit, the next round writes a `control` event with nothing before it (as the
    /// reference server does), which keeps proxies that cut idle connections from cutting
    /// this one.
    @inline(never)
    private func frame(_ chunk: HTTPCursor.Chunk) -> (ByteBuffer, Next) {
        var buffer = ByteBuffer()
        if !chunk.isEmpty { SSEFrame.data(chunk, encoding, into: &buffer) }
        let closed = chunk.terminal != nil
        SSEFrame.control(
            next: cursor.position, cursor: closed ? nil : LiveCursor.next(after: clientCursor),
            upToDate: chunk.upToDate, closed: closed, into: &buffer)
        if closed { return (buffer, .end) }
        guard chunk.upToDate else { return (buffer, .read) }
        guard let deadline else { return (buffer, .wait(keepAlive)) }
        let remaining = deadline - ContinuousClock.now
        return (buffer, remaining <= .zero ? .end : .wait(min(keepAlive, remaining)))
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
                writeLines(payload, suffix: index < payloads.count - 1 ? "," : "", into: &buffer)
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
    private static func writeLines(_ text: ByteBuffer, suffix: String, into buffer: inout ByteBuffer) {
        let view = text.readableBytesView
        var lineStart = view.startIndex
        var index = view.startIndex
        var lines: [ByteBufferView.SubSequence] = []
        while index < view.endIndex {
            let byte = view[index]
            if byte == 0x0A || byte == 0x0D {
                lines.append(view[lineStart..<index])
                if byte == 0x0D, index + 1 < view.endIndex, view[index + 1] == 0x0A { index += 1 }
                lineStart = index + 1
            }
            index += 1
        }
        lines.append(view[lineStart..<view.endIndex])
        for (number, line) in lines.enumerated() {
            // SSE drops one space after "data:": a line that starts with one gets another.
            if line.first == 0x20 { buffer.writeStaticString("data: ") } else { buffer.writeStaticString("data:") }
            buffer.writeBytes(line)
            if number == lines.count - 1 { buffer.writeString(suffix) }
            buffer.writeStaticString("\n")
        }
    }

    static func control(next: UInt64, cursor: UInt64?, upToDate: Bool, closed: Bool, into buffer: inout ByteBuffer) {
        var json = "{\"streamNextOffset\":\"\(StreamOffset.text(after: next))\""
        if let cursor { json += ",\"streamCursor\":\"\(cursor)\"" }
        if upToDate || closed { json += ",\"upToDate\":true" }
        if closed { json += ",\"streamClosed\":true" }
        json += "}"
        buffer.writeString("event: control\ndata:\(json)\n\n")
    }
}
