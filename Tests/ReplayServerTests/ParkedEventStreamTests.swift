import Foundation
import NIOCore
import ReplayTesting
import Testing

@testable import ReplayServer

/// SSE readers served with no task of their own (`ParkedEventStream`), against the real
/// daemon over real sockets: which readers are served so, that they read as any reader
/// does, and how their responses and connections end.
@Suite("replayd: SSE readers with no task", .timeLimit(.minutes(5)))
struct ParkedEventStreamTests {
    /// What a raw connection has received so far, read without waiting.
    final class Received: @unchecked Sendable {
        let fd: Int32
        var text = ""
        var closed = false

        init(_ fd: Int32) { self.fd = fd }

        func drain() -> String {
            var buffer = [UInt8](repeating: 0, count: 8192)
            while true {
                let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 {
                    text += String(decoding: buffer[..<count], as: UTF8.self)
                } else {
                    if count == 0 { closed = true }
                    return text
                }
            }
        }
    }

    /// The SSE readers, and those of them parked.
    static func readers(_ http: HTTPTestClient) async throws -> (Double?, Double?) {
        (try await gauge("replay_http_sse_readers", http), try await gauge("replay_http_sse_readers_parked", http))
    }

    /// A gauge of /metrics, by its name.
    static func gauge(_ name: String, _ http: HTTPTestClient, headers: [(String, String)] = []) async throws -> Double? {
        try await http.request("GET", "/metrics", headers: headers).text.split(separator: "\n")
            .first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
    }

    /// A reader whose connection's first request is its SSE read is parked with no task; one
    /// whose connection served a request first stays in its connection's task. Both get
    /// every event; the parked one's head says the connection ends with the response.
    @Test func aConnectionsFirstSSEReadIsParkedAndReadsAsAnyReader() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0", "--long-poll-timeout", "600"])
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain")], body: "first").status == 201)

            let parked = Received(try #require(SlowClientTests.halfRequest(port: http.port, "GET /v1/stream/s?offset=-1&live=sse HTTP/1.1\r\nHost: x\r\n\r\n")))
            defer { close(parked.fd) }
            let served = Received(
                try #require(
                    SlowClientTests.halfRequest(
                        port: http.port,
                        "HEAD /v1/stream/s HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/stream/s?offset=-1&live=sse HTTP/1.1\r\nHost: x\r\n\r\n")))
            defer { close(served.fd) }
            try await eventually("two readers, one parked") {
                try await Self.readers(http) == (2, 1)
            }

            #expect(try await http.request("POST", "/v1/stream/s", headers: [("Content-Type", "text/plain")], body: "second").status == 204)
            for reader in [parked, served] {
                try await eventually("each reader gets both events") {
                    let text = reader.drain()
                    return text.contains("data:first") && text.contains("data:second")
                }
            }
            let head = parked.text.components(separatedBy: "\r\n\r\n")[0].lowercased()
            #expect(head.hasPrefix("http/1.1 200"))
            #expect(head.contains("content-type: text/event-stream"))
            #expect(head.contains("connection: close"))
            #expect(head.contains("x-content-type-options: nosniff"))
            #expect(!served.text.lowercased().contains("connection: close"))
        }
    }

    /// The stream's close ends a parked reader's response with its last control event and
    /// the chunked body's end, then the connection closes; the gauges go back to zero. A
    /// request sent behind the read is dropped unread.
    @Test func aParkedReaderEndsWithItsStreamAndClosesItsConnection() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0", "--long-poll-timeout", "600"])
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain")]).status == 201)
            let reader = Received(
                try #require(SlowClientTests.halfRequest(port: http.port, "GET /v1/stream/s?offset=now&live=sse HTTP/1.1\r\nHost: x\r\n\r\n")))
            defer { close(reader.fd) }
            try await eventually("the reader parked") { try await Self.gauge("replay_http_sse_readers_parked", http) == 1 }
            _ = "POST /v1/stream/s HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\nbehind".withCString {
                send(reader.fd, $0, strlen($0), Int32(MSG_NOSIGNAL))
            }

            let closing = try await http.request(
                "POST", "/v1/stream/s", headers: [("Content-Type", "text/plain"), ("Stream-Closed", "true")], body: "last")
            #expect(closing.status == 204)
            try await eventually("the response ends and the connection closes") {
                _ = reader.drain()
                return reader.closed
            }
            #expect(reader.text.contains("data:last"))
            // The POST sent behind the read was not processed: its connection's head said
            // `close` (RFC 9112 §9.6), and the client sends it again on another.
            #expect(try await http.request("GET", "/v1/stream/s?offset=-1").text == "last")
            #expect(reader.text.contains("\"streamClosed\":true"))
            #expect(reader.text.hasSuffix("0\r\n\r\n"))
            try await eventually("no reader left") {
                try await Self.readers(http) == (0, 0)
            }
        }
    }

    /// What the router must answer is not parked: a refusal (unknown stream, bad offset),
    /// a read without the token the door asks for, and every read where the front door
    /// checks client rates. The refusals are the router's own.
    @Test func whatTheRouterMustAnswerIsNotParked() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(
                in: directory, arguments: ["--http", "127.0.0.1:0", "--http-token", "secret", "--http-token-reads", "--long-poll-timeout", "600"])
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            let token = ("Authorization", "Bearer secret")
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain"), token]).status == 201)
            #expect(try await http.request("GET", "/v1/stream/s?offset=now&live=sse").status == 401)
            #expect(try await http.request("GET", "/v1/stream/nope?offset=now&live=sse", headers: [token]).status == 404)
            #expect(try await http.request("GET", "/v1/stream/s?offset=zz&live=sse", headers: [token]).status == 400)
            let reader = try #require(
                SlowClientTests.halfRequest(
                    port: http.port, "GET /v1/stream/s?offset=now&live=sse HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer secret\r\n\r\n"))
            defer { close(reader) }
            try await eventually("the reader with the token parked") {
                try await Self.gauge("replay_http_sse_readers_parked", http, headers: [token]) == 1
            }
        }
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(
                in: directory, arguments: ["--http", "127.0.0.1:0", "--rate-limit-requests", "1000/s", "--long-poll-timeout", "600"])
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain")]).status == 201)
            let reader = try #require(SlowClientTests.halfRequest(port: http.port, "GET /v1/stream/s?offset=now&live=sse HTTP/1.1\r\nHost: x\r\n\r\n"))
            defer { close(reader) }
            try await eventually("the reader is served in its task") {
                try await Self.readers(http) == (1, 0)
            }
        }
    }

    /// A daemon asked to stop with parked readers ends their responses and exits at once,
    /// not at their keep-alives (ten minutes away).
    @Test func parkedReadersEndAtShutdown() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0", "--long-poll-timeout", "600"])
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain")]).status == 201)
            let readers = try (0..<3).map { _ in
                Received(try #require(SlowClientTests.halfRequest(port: http.port, "GET /v1/stream/s?offset=now&live=sse HTTP/1.1\r\nHost: x\r\n\r\n")))
            }
            defer { for reader in readers { close(reader.fd) } }
            try await eventually("three readers parked") { try await Self.gauge("replay_http_sse_readers_parked", http) == 3 }
            #expect(await daemon.stop() == 0)
            for reader in readers {
                _ = reader.drain()
                #expect(reader.closed)
                #expect(reader.text.hasSuffix("0\r\n\r\n"))
            }
        }
    }

    /// Readers of one stream that a commit wakes at the same position share one framing of
    /// its events (`SharedFrames`), and each still reads exactly its own: three from the
    /// start, three from now, and one with a filter, which frames its own. Each body is a
    /// chunked body that a strict decoder takes.
    @Test func readersAtOnePositionShareAFramingAndEachReadsItsOwn() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0", "--long-poll-timeout", "600"])
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            let json = [("Content-Type", "application/json")]
            #expect(try await http.request("PUT", "/v1/stream/s", headers: json).status == 201)
            #expect(try await http.request("POST", "/v1/stream/s", headers: json, body: #"{"p":1}"#).status == 204)
            func reader(_ query: String) throws -> Received {
                Received(try #require(SlowClientTests.halfRequest(port: http.port, "GET /v1/stream/s?\(query)&live=sse HTTP/1.1\r\nHost: x\r\n\r\n")))
            }
            let fromStart = try (0..<3).map { _ in try reader("offset=-1") }
            let fromNow = try (0..<3).map { _ in try reader("offset=now") }
            let filtered = try reader("offset=-1&filter=.p%20%2A%2010")  // .p * 10
            let all = fromStart + fromNow + [filtered]
            defer { for reader in all { close(reader.fd) } }
            try await eventually("seven readers parked") { try await Self.gauge("replay_http_sse_readers_parked", http) == 7 }

            for p in 2...4 {
                #expect(try await http.request("POST", "/v1/stream/s", headers: json, body: #"{"p":\#(p)}"#).status == 204)
            }
            let expected = [
                (fromStart, [#"{"p":1}"#, #"{"p":2}"#, #"{"p":3}"#, #"{"p":4}"#]), (fromNow, [#"{"p":2}"#, #"{"p":3}"#, #"{"p":4}"#]),
                ([filtered], ["10", "20", "30", "40"]),
            ]
            for (readers, messages) in expected {
                for reader in readers {
                    try await eventually("each reader reads its own events") {
                        try Self.messages(inChunkedBodyOf: reader.drain()) == messages
                    }
                }
            }
        }
    }

    /// The messages of an SSE response's `data` events, its body decoded strictly from
    /// HTTP/1.1 chunks (each size line's size is exactly the bytes that follow it).
    static func messages(inChunkedBodyOf response: String) throws -> [String] {
        guard let headEnd = response.range(of: "\r\n\r\n") else { return [] }
        var rest = Substring(response[headEnd.upperBound...]).utf8
        var body = [UInt8]()
        while let lineEnd = rest.firstRange(of: "\r\n".utf8) {
            let size = try #require(Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16))
            let data = rest[lineEnd.upperBound...]
            guard data.count >= size + 2 else { break }  // not all here yet
            body += data.prefix(size)
            #expect(Array(data.dropFirst(size).prefix(2)) == Array("\r\n".utf8))
            rest = data.dropFirst(size + 2)
        }
        var messages: [String] = []
        for event in String(decoding: body, as: UTF8.self).components(separatedBy: "\n\n") where event.hasPrefix("event: data\n") {
            for line in event.split(separator: "\n").dropFirst() {
                let message = line.dropFirst("data:".count)
                if message == "[" || message == "]" { continue }
                messages.append(String(message.hasSuffix(",") ? message.dropLast() : message))
            }
        }
        return messages
    }
}

/// `HTTPChunk`'s framing, byte for byte.
@Suite struct HTTPChunkTests {
    @Test func aChunkIsItsSizeInEightHexDigitsThenItsBytesThenCRLF() {
        let text = String(repeating: "x", count: 0x1a2b)
        let chunk = HTTPChunk.framing { $0.writeString(text) }
        #expect(chunk.getString(at: 0, length: chunk.readableBytes) == "00001a2b\r\n" + text + "\r\n")
        #expect(String(buffer: HTTPChunk.last) == "0\r\n\r\n")
    }
}
