import Foundation
import NIOCore
import ReplayModel

/// replay's Durable Streams HTTP front door as a reader: catch-up with GETs from the start
/// (one keep-alive connection, page after page by `Stream-Next-Offset`), live with one SSE
/// response. Publishing goes through the socket (replay's own client), so the figures
/// compare the two ways of reading the same log. Events of a stream created over the socket
/// travel as bytes, so SSE carries them as base64; every payload of a run has the same size,
/// which is how a response's bytes are cut back into events.
final class ReplayHTTPBenchClient: BenchClient {
    private let publisher: ReplayBenchClient
    private let http: BufferedSocket
    private let host: String
    private let payloadSize: Int
    private var stream = ""
    private var offset = "-1"
    private var live = false
    /// SSE: decoded body bytes not yet cut into lines, and the data lines of the event being read.
    private var sseText = ByteBuffer()
    private var eventName = ""
    private var eventData = ""
    private var chunkRemaining = 0

    init(socketPath: String, host: String, port: Int, payloadSize: Int) throws {
        publisher = try ReplayBenchClient(path: socketPath)
        http = try BufferedSocket(host: host, port: port)
        self.host = "\(host):\(port)"
        self.payloadSize = payloadSize
    }

    func queuePublish(_ stream: String, _ payload: ByteBuffer) { publisher.queuePublish(stream, payload) }
    func queuePublish(_ stream: String, _ payload: ByteBuffer, checks: AppendConditions) throws {
        publisher.queuePublish(stream, payload, checks: checks)
    }
    func flush() throws { try publisher.flush() }
    func readAck() throws { try publisher.readAck() }
    func ping() throws { try publisher.ping() }

    func subscribe(_ stream: String, fromStart: Bool) throws {
        self.stream = stream
        live = !fromStart
        offset = fromStart ? "-1" : "now"
        if live {
            // The stream must exist for a GET: declare it (a stream of bytes, as the socket
            // would have made it).
            http.write {
                $0.writeString("PUT /v1/stream/\(stream) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/octet-stream\r\nContent-Length: 0\r\n\r\n")
            }
            try http.flush()
            let created = try readHead()
            guard created.status == 200 || created.status == 201 else { throw BenchError("PUT answered \(created.status)") }
            try request("offset=now&live=sse")
            let head = try readHead()
            guard head.status == 200 else { throw BenchError("SSE answered \(head.status)") }
        }
    }

    func nextEvents() throws -> [ByteBuffer] {
        live ? try sseEvents() : try catchUpPage()
    }

    private func request(_ query: String) throws {
        http.write { $0.writeString("GET /v1/stream/\(stream)?\(query) HTTP/1.1\r\nHost: \(host)\r\n\r\n") }
        try http.flush()
    }

    private struct Head {
        var status = 0
        var contentLength = 0
        var nextOffset = ""
    }

    /// Reads a response's status line and headers.
    private func readHead() throws -> Head {
        while true {
            let view = http.input.readableBytesView
            if let end = view.firstRange(of: Array("\r\n\r\n".utf8)) {
                let length = end.upperBound - view.startIndex
                let text = http.input.readString(length: length) ?? ""
                var head = Head()
                for (index, line) in text.split(separator: "\r\n").enumerated() {
                    if index == 0 {
                        head.status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
                        continue
                    }
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = line[..<colon].lowercased()
                    let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    if name == "content-length" { head.contentLength = Int(value) ?? 0 }
                    if name == "stream-next-offset" { head.nextOffset = value }
                }
                return head
            }
            try http.fill()
        }
    }

    private func catchUpPage() throws -> [ByteBuffer] {
        try request("offset=\(offset)")
        let head = try readHead()
        guard head.status == 200 else { throw BenchError("catch-up answered \(head.status)") }
        while http.input.readableBytes < head.contentLength { try http.fill() }
        var body = http.input.readSlice(length: head.contentLength)!
        http.discardRead()
        offset = head.nextOffset
        var events: [ByteBuffer] = []
        events.reserveCapacity(head.contentLength / max(1, payloadSize))
        while body.readableBytes >= payloadSize { events.append(body.readSlice(length: payloadSize)!) }
        return events
    }

    /// Reads SSE events until a `data` event has brought at least one payload.
    private func sseEvents() throws -> [ByteBuffer] {
        var events: [ByteBuffer] = []
        while events.isEmpty || http.input.readableBytes > 0 {
            try decodeChunks()
            while let line = nextLine() {
                if line.isEmpty {
                    if eventName == "data", let bytes = Data(base64Encoded: eventData) {
                        var buffer = ByteBuffer(bytes: bytes)
                        while buffer.readableBytes >= payloadSize { events.append(buffer.readSlice(length: payloadSize)!) }
                    }
                    eventName = ""
                    eventData = ""
                } else if line.hasPrefix("event:") {
                    eventName = line.dropFirst(6).trimmingCharacters(in: .whitespaces)
                } else if line.hasPrefix("data:") {
                    eventData += line.dropFirst(5)
                }
            }
            if events.isEmpty { try http.fill() }
        }
        return events
    }

    /// Moves the chunked body's payload from the socket's input to `sseText`.
    private func decodeChunks() throws {
        while http.input.readableBytes > 0 {
            if chunkRemaining > 0 {
                let take = min(chunkRemaining, http.input.readableBytes)
                var slice = http.input.readSlice(length: take)!
                sseText.writeBuffer(&slice)
                chunkRemaining -= take
                if chunkRemaining == 0 { chunkRemaining = -2 }  // the CRLF after the chunk
                continue
            }
            if chunkRemaining < 0 {
                guard http.input.readableBytes >= 2 else { return }
                http.input.moveReaderIndex(forwardBy: 2)
                chunkRemaining = 0
                continue
            }
            let view = http.input.readableBytesView
            guard let end = view.firstRange(of: [13, 10]) else { return }
            let sizeText = http.input.readString(length: end.lowerBound - view.startIndex) ?? ""
            http.input.moveReaderIndex(forwardBy: 2)
            guard let size = Int(sizeText, radix: 16), size > 0 else { throw BenchError("the SSE response ended") }
            chunkRemaining = size
        }
        http.discardRead()
    }

    private func nextLine() -> String? {
        let view = sseText.readableBytesView
        guard let end = view.firstIndex(of: 10) else { return nil }
        let line = sseText.readString(length: end - view.startIndex) ?? ""
        sseText.moveReaderIndex(forwardBy: 1)
        if sseText.readerIndex > 1 << 20 { sseText.discardReadBytes() }
        return line
    }
}
