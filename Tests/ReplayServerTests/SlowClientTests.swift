import Foundation
import ReplayTesting
import Testing

@testable import ReplayServer

/// Clients that open many HTTP connections and send half a request head on each (a
/// "slowloris") against the real daemon under a small descriptor limit: the socket door
/// keeps serving, the daemon closes them once their head is late, and HTTP serves again.
@Suite("replayd: slow HTTP clients", .timeLimit(.minutes(5)))
struct SlowClientTests {
    /// A TCP connection to 127.0.0.1:`port` that sent `text` and holds.
    static func halfRequest(port: Int, _ text: String) -> Int32? {
        guard let fd = loopbackSocket(port: port) else { return nil }
        _ = text.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        return fd
    }

    /// Whether the server closed the connection (a read returns end of file or an error).
    static func isClosed(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 512)
        let read = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return read == 0 || (read < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// A client that leaves while its SSE response is parked, with a reset or with a FIN:
    /// its connection and its reader end at once, not at the stream's next keep-alive write (here ten minutes away, so
    /// without it the wait below would run out); the reader that stays is served.
    @Test func anSSEClientThatLeavesEndsItsReaderAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0", "--long-poll-timeout", "600"])
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain")]).status == 201)
            func gauge(_ name: String) async throws -> Double? { try await ParkedEventStreamTests.gauge(name, http) }
            let readers = (0..<3).compactMap { _ in
                Self.halfRequest(port: http.port, "GET /v1/stream/s?offset=now&live=sse HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            }
            #expect(readers.count == 3)
            defer { for fd in readers.suffix(1) { close(fd) } }
            try await eventually("three readers parked") { try await gauge("replay_http_sse_readers") == 3 }

            close(readers[0])
            // The second leaves as curl and browsers do: everything read, then a FIN (a
            // close with unread input would send a reset instead).
            var drain = [UInt8](repeating: 0, count: 4096)
            while recv(readers[1], &drain, drain.count, Int32(MSG_DONTWAIT)) > 0 {}
            close(readers[1])
            try await eventually("the two that left ended") { try await gauge("replay_http_sse_readers") == 1 }

            #expect(try await http.request("POST", "/v1/stream/s", headers: [("Content-Type", "text/plain")], body: "still here").status == 204)
            var received = ""
            try await eventually("the reader that stayed gets the event") {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let count = recv(readers[2], &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 { received += String(decoding: buffer[..<count], as: UTF8.self) }
                return received.contains("data:still here")
            }
        }
    }

    /// The page's tail is the same reader loop: a client that leaves it is noticed at once,
    /// not at the tail's next keep-alive (ten minutes away here).
    @Test func aTailClientThatLeavesEndsItsReaderAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0", "--long-poll-timeout", "600"])
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain")], body: "a").status == 201)
            func readers() async throws -> Double? { try await ParkedEventStreamTests.gauge("replay_http_sse_readers", http) }
            let tail = try #require(Self.halfRequest(port: http.port, "GET /v1/tail/s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
            try await eventually("the tail parked") { try await readers() == 1 }
            var drain = [UInt8](repeating: 0, count: 4096)
            while recv(tail, &drain, drain.count, Int32(MSG_DONTWAIT)) > 0 {}
            close(tail)
            try await eventually("the tail that left ended") { try await readers() == 0 }
        }
    }

    /// The HTTP door's cap is what the reserve and the socket door's own cap leave: half each
    /// by default, more for HTTP where the socket door is given fewer connections.
    @Test func theHTTPCapTakesWhatTheSocketDoorLeaves() async throws {
        #expect(HTTPConnectionBudget.limit(configured: 10_000, descriptors: 20_000, socketConnections: 10_000) == 9_936)
        #expect(HTTPConnectionBudget.limit(configured: 10_000, descriptors: 20_000, socketConnections: 9_000) == 10_000)
        #expect(HTTPConnectionBudget.limit(configured: 50_000, descriptors: 20_000, socketConnections: 1_000) == 18_872)
        #expect(HTTPConnectionBudget.limit(configured: 10_000, descriptors: 1_024, socketConnections: 10_000) == 448)
        #expect(HTTPConnectionBudget.limit(configured: 10_000, descriptors: 100, socketConnections: 10_000) == 16)

        try await Prerequisite.prlimit.require()
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(
                in: directory, arguments: ["--http", "127.0.0.1:0", "--max-connections", "100"], descriptorLimit: 1024)
            defer { Task { await daemon.stop() } }
            _ = try await daemon.httpAddress()
            #expect(daemon.log.contains("http: at most 796 connections"), "1,024 less a reserve of 128 and the socket door's 100")
        }
    }

    @Test func halfSentRequestsAreShedAndClosedWhileTheSocketDoorServes() async throws {
        try await Prerequisite.prlimit.require()
        // This process needs more than 1,100 descriptors of its own.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 4096))
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)

        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(
                in: directory, arguments: ["--http", "127.0.0.1:0", "--http-header-timeout", "15"], descriptorLimit: 1024)
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(daemon.log.contains("http: at most 448 connections"), "half of 1,024 less a reserve of 128")

            var held: [Int32] = []
            defer { for fd in held { close(fd) } }
            for _ in 0..<1_100 {
                guard let fd = Self.halfRequest(port: http.port, "GET /v1/streams HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow") else { break }
                held.append(fd)
            }
            #expect(held.count == 1_100)

            // The socket door takes a publish meanwhile.
            let sequences = try await withWireClient(daemon.socketPath) { try await $0.publish("still-here", ["x"]) }
            #expect(sequences == [1])

            // Every half-sent request is closed: at once beyond the cap, the rest once late.
            try await eventually(within: 60, "every held connection closed by the daemon") { held.allSatisfy(Self.isClosed) }
            #expect(daemon.log.contains("refused so far"))

            // HTTP serves again, and counted what it shed.
            let metrics = try await http.request("GET", "/metrics")
            #expect(metrics.status == 200)
            let lines = metrics.text.split(separator: "\n")
            let shed = lines.first { $0.hasPrefix("replay_http_connections_shed_total ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
            let late = lines.first { $0.hasPrefix("replay_http_header_timeouts_total ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
            // (The header timeout, 15 s, is long enough for all of them to be opened before the
            // first is late, even on a loaded machine: beyond the cap they are shed.)
            #expect(shed > 0, "refused beyond the cap")
            #expect(late > 0, "closed for a late head")
            #expect(shed + late >= 1_100, "\(shed) shed, \(late) late")
            #expect(daemon.isRunning)
        }
    }
}
