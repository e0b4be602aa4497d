import Foundation
import Hummingbird
import NIOCore
import ReplayStore

/// SSE (Durable Streams PROTOCOL.md §5.8): `data` events carry the events (text, or base64 for binary
/// streams), each followed by a `control` event with the next offset; a quiet stream gets a
/// `control` event every long-poll timeout. The response lasts until the client leaves,
/// or `--sse-duration` (about a minute where a CDN collapses readers). The response is a
/// cursor: a chunk is written, and the next is read only once the write is done, so a
/// reader that stalls holds its position and nothing else.
extension StreamEndpoint {
    func sse(_ start: HTTPCursor, info: StreamInfo, clientCursor: UInt64?) -> Response {
        var fields = HTTPFields()
        fields[.contentType] = "text/event-stream"
        fields[.cacheControl] = "no-cache"
        if !info.isText { fields[.streamSSEDataEncoding] = "base64" }
        let (duration, keepAlive) = (settings.sseDuration, settings.longPollTimeout)
        let body = ResponseBody { writer in
            DaemonMetrics.sseReaders.increment()
            defer { DaemonMetrics.sseReaders.decrement() }
            var cursor = start
            let deadline = duration.map { ContinuousClock.now.advanced(by: $0) }
            while !Task.isCancelled {
                let chunk: HTTPCursor.Chunk
                do {
                    chunk = try await cursor.chunk()
                } catch {
                    // Gone or deleted mid-stream: end; the client's reconnect gets the status.
                    break
                }
                var buffer = ByteBuffer()
                if !chunk.isEmpty { SSEFrame.data(chunk, info: info, into: &buffer) }
                let closed = chunk.terminal != nil
                SSEFrame.control(
                    next: cursor.position, cursor: closed ? nil : LiveCursor.next(after: clientCursor),
                    upToDate: chunk.upToDate, closed: closed, into: &buffer)
                try await writer.write(buffer)
                if closed { break }
                if chunk.upToDate {
                    // Quiet: after `keepAlive` with no commit, the next round writes a
                    // `control` event with nothing before it (as the reference server does),
                    // which keeps proxies that cut idle connections from cutting this one.
                    var wait = keepAlive
                    if let deadline {
                        let remaining = deadline - ContinuousClock.now
                        if remaining <= .zero { break }
                        wait = min(wait, remaining)
                    }
                    if await LiveWait.wait(cursor, timeout: wait) == .shuttingDown { break }
                }
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: fields, body: body)
    }
}

/// The text of SSE events.
enum SSEFrame {
    /// One `data` event: JSON messages as one array, text as its lines, binary as base64.
    static func data(_ chunk: HTTPCursor.Chunk, info: StreamInfo, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("event: data\n")
        if info.isJSON {
            buffer.writeStaticString("data:[\n")
            let payloads = chunk.payloads
            for (index, payload) in payloads.enumerated() {
                writeLines(payload, suffix: index < payloads.count - 1 ? "," : "", into: &buffer)
            }
            buffer.writeStaticString("data:]\n")
        } else if info.isText {
            writeLines(chunk.bytes, suffix: "", into: &buffer)
        } else {
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
