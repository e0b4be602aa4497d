import Foundation
import ReplayTesting
import Testing

/// POSTs answered on their event loop (`InlineAppendHandler`), beside the requests
/// hummingbird's router answers, on one keep-alive connection, over real HTTP.
@Suite("replayd: POSTs answered on their event loop", .timeLimit(.minutes(3)))
struct InlineAppendTests {
    static let path = "/v1/stream/inline"

    static func post(_ body: String, _ extra: String = "", to path: String = path) -> String {
        "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    /// The requests of both tests: plain POSTs, which the event loop takes, a GET and a
    /// chunked POST, which it hands to the router, a POST to no stream and one the store
    /// refuses, which it answers itself when it takes them, and last a POST whose
    /// `Connection: close` ends the connection after its answer.
    static let requests = [
        post("a"),
        post("c", "Origin: http://elsewhere.example\r\n"),
        post("d", "Producer-Id: p\r\nProducer-Epoch: 0\r\nProducer-Seq: 0\r\n"),
        "GET \(path)?offset=-1 HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST \(path) HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\n\r\n",
        post("z", to: "/v1/stream/missing"),
        // Out of the producer's order: the store refuses it.
        post("y", "Producer-Id: p\r\nProducer-Epoch: 0\r\nProducer-Seq: 5\r\n"),
        post("e", "Connection: close\r\n"),
    ]

    /// Each answer is as the router words it, whichever path took the request.
    static func check(_ answers: [RawHTTP.Answer]) {
        #expect(answers.map(\.status) == [204, 204, 200, 200, 204, 404, 409, 204])
        guard answers.count == 8 else { return }
        #expect(answers[0].headers["stream-next-offset"] == "0000000000000001_0000000000000000")
        #expect(answers[1].headers["stream-next-offset"] == "0000000000000002_0000000000000000")
        #expect(answers[1].headers["access-control-allow-origin"] == nil, "an origin not allowed gets no CORS headers")
        #expect(answers[2].headers["producer-seq"] == "0")
        #expect(answers[2].headers["producer-epoch"] == "0")
        #expect(answers[2].headers["stream-next-offset"] == "0000000000000003_0000000000000000")
        #expect(answers[3].body == "acd")
        #expect(answers[4].headers["stream-next-offset"] == "0000000000000004_0000000000000000")
        #expect(answers[5].body.contains("no stream named 'missing'"))
        #expect(answers[6].headers["producer-expected-seq"] == "1")
        #expect(answers[6].body.contains("expects pseq=1, got pseq=5"))
        #expect(answers[7].headers["stream-next-offset"] == "0000000000000005_0000000000000000")
        for answer in answers {
            #expect(answer.headers["x-content-type-options"] == "nosniff")
            #expect(answer.headers["date"]?.hasSuffix(" GMT") == true)
        }
    }

    static func metric(_ http: HTTPTestClient, _ name: String) async throws -> Double? {
        try await http.request("GET", "/metrics").text.split(separator: "\n")
            .first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last!) }
    }

    /// One request at a time on a keep-alive connection: every POST with a known length is
    /// taken on the event loop, counted and timed as the router's are, the two refused
    /// included (answered there, with no second trip to the writer). e too: it follows the
    /// router's answer to the chunked POST, which the client reads whole before that
    /// answer's end (which writes no bytes) has passed the handler; its head has, so e is
    /// taken, and its answer would wait for that end.
    @Test func plainPostsAreAnsweredOnTheEventLoopAndTheRestByTheRouter() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            #expect(try await http.request("PUT", Self.path, headers: [("Content-Type", "text/plain")]).status == 201)
            let connection = try RawHTTP(port: http.port)
            var answers: [RawHTTP.Answer] = []
            for request in Self.requests {
                try await connection.send(request)
                answers.append(try await connection.answer())
            }
            #expect(try await connection.isClosed())
            Self.check(answers)
            #expect(try await http.request("GET", Self.path + "?offset=-1").text == "acdbe")
            #expect(try await Self.metric(http, "replay_http_appends_inline_total") == 6)
            let route = #"hb_requests{http_route="/v1/stream/**",http_request_method="POST",http_response_status_code=""#
            #expect(try await Self.metric(http, route + #"204"}"#) == 4)
            #expect(try await Self.metric(http, route + #"200"}"#) == 1)
            #expect(try await Self.metric(http, route + #"404"}"#) == 1)
            #expect(try await Self.metric(http, route + #"409"}"#) == 1)
        }
    }

    /// All the requests in one write: the first POST is taken on the event loop, what
    /// arrives meanwhile waits for its answer, and every answer comes in the order asked.
    /// (a, c and d are taken; e follows requests handed to the router at once, before their
    /// answers' heads, so it goes there too.)
    @Test func pipelinedRequestsAreAnsweredInOrderWhicheverPathTakesThem() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            #expect(try await http.request("PUT", Self.path, headers: [("Content-Type", "text/plain")]).status == 201)
            let connection = try RawHTTP(port: http.port)
            try await connection.send(Self.requests.joined())
            var answers: [RawHTTP.Answer] = []
            for _ in Self.requests { answers.append(try await connection.answer()) }
            #expect(try await connection.isClosed())
            Self.check(answers)
            #expect(try await http.request("GET", Self.path + "?offset=-1").text == "acdbe")
            #expect(try await Self.metric(http, "replay_http_appends_inline_total") ?? 0 >= 3)
        }
    }

    /// A POST sent behind an SSE read of its stream, on the same connection, once the SSE
    /// answer's head has come, is taken (a read does nothing the POST must wait for): its
    /// event reaches that very SSE answer, and its own answer follows the SSE answer's end
    /// (here, the stream closed from another connection once the event has arrived).
    /// Handed to the router, it would not even be read before that end, and the event
    /// would never arrive. (The connection serves a read first: an SSE read that is a
    /// connection's first request is served with no task and ends the connection,
    /// `ParkedEventStreamTests`.)
    @Test func aPostBehindAnSSEReadIsTakenAndItsAnswerWaitsForThatReadsEnd() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            let text = [("Content-Type", "text/plain")]
            #expect(try await http.request("PUT", "/v1/stream/s", headers: text).status == 201)
            let connection = try RawHTTP(port: http.port)
            try await connection.send("GET /v1/stream/s?offset=-1 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await connection.answer().status == 200)
            try await connection.send("GET /v1/stream/s?offset=-1&live=sse HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try await connection.text(through: "event: control")
            #expect(head.hasPrefix("HTTP/1.1 200"))
            try await connection.send(Self.post("x", to: "/v1/stream/s"))
            _ = try await connection.text(through: "event: data\ndata:x\n")
            #expect(try await http.request("POST", "/v1/stream/s", headers: text + [("Stream-Closed", "true")]).status == 204)
            let rest = try await connection.text(through: "\r\n0\r\n\r\n")
            #expect(rest.contains("\"streamClosed\":true"))
            let answer = try await connection.answer()
            #expect(answer.status == 204)
            #expect(answer.headers["stream-next-offset"] == "0000000000000001_0000000000000000")
            #expect(try await Self.metric(http, "replay_http_appends_inline_total") ?? 0 >= 1)
        }
    }

    /// A body of many reads is appended whole; one over `--max-payload` is not taken, and
    /// the router answers 413 as for any POST.
    @Test func aLargeBodyIsAppendedWholeAndOneOverTheBoundIsTheRouters() async throws {
        try await withHTTP(arguments: ["--max-payload", "1000000"]) { (_: TestDaemon, http: HTTPTestClient) async throws in
            #expect(try await http.request("PUT", "/v1/stream/big", headers: [("Content-Type", "application/octet-stream")]).status == 201)
            // Over a dozen reads of the socket, in NIO's reads of at most 64 KiB.
            let body = Data((0..<900_000).map { UInt8(truncatingIfNeeded: $0 % 251) })
            let headers = [("Content-Type", "application/octet-stream")]
            #expect(try await http.request("POST", "/v1/stream/big", headers: headers, bytes: body).status == 204)
            #expect(try await http.request("POST", "/v1/stream/big", headers: headers, bytes: body + body.prefix(100_001)).status == 413)
            #expect(try await http.request("GET", "/v1/stream/big?offset=-1").body == body)
            #expect(try await Self.metric(http, "replay_http_appends_inline_total") == 1)
        }
    }

    /// A graceful stop (SIGTERM) while a taken POST's body is still arriving waits for it:
    /// the POST is answered and stored, then its connection is closed and the daemon ends.
    /// (The handler holds the stop's quiesce event: passed on, hummingbird's connection
    /// handler, which has seen no request, would close an idle connection unanswered.)
    @Test func aStopWaitsForAPostWhoseBodyIsArriving() async throws {
        try await withTemporaryDirectory { directory in
            let arguments = ["--http", "127.0.0.1:0"]
            let daemon = try await TestDaemon.start(in: directory, arguments: arguments)
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain")]).status == 201)
            let connection = try RawHTTP(port: http.port)
            try await connection.send("POST /v1/stream/s HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nhello")
            let active = #"http_server_active_requests{http_request_method="POST"}"#
            try await eventually("the POST taken, its body half there") { try await Self.metric(http, active) == 1 }

            daemon.signal(SIGTERM)
            // The door stops first (its listener closed, then the quiesce to each
            // connection); the rest of the daemon waits for it.
            try await eventually("the door closed to new connections") { (try? await http.request("GET", "/metrics")) == nil }
            try await connection.send("world")
            let answer = try await connection.answer()
            #expect(answer.status == 204)
            #expect(answer.headers["stream-next-offset"] == "0000000000000001_0000000000000000")
            #expect(try await connection.isClosed())
            #expect(await daemon.waitForExit() == 0)

            let again = try await TestDaemon.start(in: directory, arguments: arguments)
            let stored = try await HTTPTestClient(address: try await again.httpAddress()).request("GET", "/v1/stream/s?offset=-1")
            #expect(stored.text == "helloworld")
            await again.stop()
        }
    }

    /// A client gone in the middle of a taken POST's body: nothing is stored, and the request
    /// is no longer counted as active.
    @Test func aClientGoneMidBodyLeavesNothingBehind() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            #expect(try await http.request("PUT", "/v1/stream/s", headers: [("Content-Type", "text/plain")]).status == 201)
            let active = #"http_server_active_requests{http_request_method="POST"}"#
            do {
                let connection = try RawHTTP(port: http.port)
                try await connection.send("POST /v1/stream/s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhalf")
                try await eventually("the POST taken, its body half there") { try await Self.metric(http, active) == 1 }
            }
            try await eventually("the POST no longer active") { try await Self.metric(http, active) == 0 }
            #expect(try await http.request("POST", "/v1/stream/s", headers: [("Content-Type", "text/plain")], body: "whole").status == 204)
            #expect(try await http.request("GET", "/v1/stream/s?offset=-1").text == "whole")
        }
    }

    /// A client that sends its POSTs and then closes its side of the connection (as `nc -N`
    /// does at the end of its input) gets every answer, one POST or several: reading goes on
    /// while a taken POST is at the store, and the end of the input it finds waits behind
    /// the answers of what came before it.
    @Test func aClientThatClosesItsSideAfterItsPostsGetsEveryAnswer() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            #expect(try await http.request("PUT", "/v1/stream/h", headers: [("Content-Type", "text/plain")]).status == 201)
            for bodies in [["a"], ["b", "c"]] {
                let connection = try RawHTTP(port: http.port)
                try await connection.send(bodies.map { Self.post($0, to: "/v1/stream/h") }.joined())
                try await connection.finishSending()
                for _ in bodies { #expect(try await connection.answer().status == 204) }
                #expect(try await connection.isClosed())
            }
            #expect(try await http.request("GET", "/v1/stream/h?offset=-1").text == "abc")
            #expect(try await Self.metric(http, "replay_http_appends_inline_total") == 3)
        }
    }

    /// With client rates, a POST within them is taken on the event loop and charged to the
    /// door's one table; one over them goes to the router, which refuses it (429, counted
    /// once); a taken POST that is refused (to no stream) is charged once. Bytes per hour, so that nothing refills during the test and the reads of
    /// `/metrics`, which carry no bytes, still pass.
    @Test func aDoorWithClientRatesTakesPostsWithinThemAndTheRouterRefusesTheRest() async throws {
        try await withHTTP(arguments: ["--rate-limit-bytes", "10/h"]) { (_: TestDaemon, http: HTTPTestClient) async throws in
            let text = [("Content-Type", "text/plain")]
            #expect(try await http.request("PUT", "/v1/stream/r", headers: text).status == 201)
            #expect(try await http.request("POST", "/v1/stream/r", headers: text, body: "aaa").status == 204)
            #expect(try await http.request("POST", "/v1/stream/r", headers: text, body: "bbb").status == 204)
            // 4 bytes left: taken here and refused here (404); 1 left.
            #expect(try await http.request("POST", "/v1/stream/none", headers: text, body: "ccc").status == 404)
            #expect(try await http.request("POST", "/v1/stream/r", headers: text, body: "d").status == 204)
            let over = try await http.request("POST", "/v1/stream/r", headers: text, body: "e")
            #expect(over.status == 429)
            #expect(over["Retry-After"] != nil)
            #expect(over.text.contains("address 127.0.0.1 is over its rate"))
            #expect(try await http.request("GET", "/v1/stream/r?offset=-1").text == "aaabbbd")
            #expect(try await Self.metric(http, "replay_http_appends_inline_total") == 4)
            #expect(try await Self.metric(http, #"replay_rate_limited_total{door="http"}"#) == 1)
        }
    }
}

/// HTTP/1.1 by hand over a blocking socket: requests written as given, answers read one
/// at a time (each body by its `Content-Length`). Its reads and writes run on a thread of
/// their own (`blockingCall`), never on the test process's cooperative pool; one test
/// drives it, one call at a time, hence `@unchecked Sendable`.
final class RawHTTP: @unchecked Sendable {
    struct Answer {
        let status: Int
        /// Lowercased names.
        let headers: [String: String]
        let body: String
    }

    private let fd: Int32
    private var received: [UInt8] = []

    init(port: Int) throws {
        guard let fd = loopbackSocket(port: port) else { throw TestFailure("cannot connect to port \(port): \(errno)") }
        self.fd = fd
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) async throws {
        try await blockingCall { [fd] in
            let bytes = Array(text.utf8)
            guard Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw TestFailure("send: \(errno)") }
        }
    }

    /// Closes this side of the connection: the server reads the end of its input.
    func finishSending() async throws {
        guard shutdown(fd, Int32(SHUT_WR)) == 0 else { throw TestFailure("shutdown: \(errno)") }
    }

    /// The next answer, read as far as it needs.
    func answer() async throws -> Answer {
        try await blockingCall { try self.readAnswer() }
    }

    /// What arrives up to and including `marker`, as text (for an answer this type does
    /// not parse, such as a chunked one), within `seconds`: an SSE answer's keep-alives
    /// would keep a read waiting for a marker that never comes from timing out.
    func text(through marker: String, within seconds: Double = 30) async throws -> String {
        try await blockingCall {
            let bytes = Array(marker.utf8)
            let deadline = ContinuousClock.now + .seconds(seconds)
            while ContinuousClock.now < deadline {
                if let start = self.received.indices.first(where: { self.received[$0...].starts(with: bytes) }) {
                    let text = String(decoding: self.received[..<(start + bytes.count)], as: UTF8.self)
                    self.received.removeFirst(start + bytes.count)
                    return text
                }
                guard try self.receive() else { throw TestFailure("closed before \(marker.debugDescription)") }
            }
            throw TestFailure("no \(marker.debugDescription) within \(seconds) s")
        }
    }

    /// Whether the server closed the connection, with nothing more sent.
    func isClosed() async throws -> Bool {
        try await blockingCall { try !self.receive() && self.received.isEmpty }
    }

    private func readAnswer() throws -> Answer {
        while true {
            if let (answer, used) = try Self.parse(received[...]) {
                received.removeFirst(used)
                return answer
            }
            guard try receive() else { throw TestFailure("closed after \(received.count) bytes of an answer") }
        }
    }

    private func receive() throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count >= 0 else { throw TestFailure("recv: \(errno), with \(received.count) bytes unparsed") }
        received += buffer[..<count]
        return count > 0
    }

    /// One whole answer at the start of `bytes` and the bytes it took, or `nil` if it has
    /// not all arrived.
    private static func parse(_ bytes: ArraySlice<UInt8>) throws -> (Answer, Int)? {
        let separator = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { return nil }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        guard let status = lines.first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw TestFailure("not a status line: \(lines.first ?? "")")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = headers["content-length"].flatMap { Int($0) } ?? 0
        let bodyStart = end + separator.count
        guard bytes.endIndex - bodyStart >= length else { return nil }
        let body = String(decoding: bytes[bodyStart..<bodyStart + length], as: UTF8.self)
        return (Answer(status: status, headers: headers, body: body), bodyStart + length - bytes.startIndex)
    }
}
