import Foundation
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
}
