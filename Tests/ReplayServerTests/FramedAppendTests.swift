import Foundation
import ReplayTesting
import Testing

/// POSTs read from a plain connection's bytes and answered in bytes, before NIO's HTTP
/// codec (`FramedAppendHandler`), over real HTTP: what they are answered, and where the
/// connection goes once it sends anything else.
@Suite("replayd: POSTs read from the connection's bytes", .timeLimit(.minutes(3)))
struct FramedAppendTests {
    static let path = "/v1/stream/framed"
    static let text = [("Content-Type", "text/plain")]

    static func post(_ body: String, _ extra: String = "", to path: String = path) -> String {
        InlineAppendTests.post(body, extra, to: path)
    }

    static func metric(_ http: HTTPTestClient, _ name: String) async throws -> Double {
        try await InlineAppendTests.metric(http, name) ?? -1
    }

    /// POSTs on a connection of their own, pipelined and one at a time, are framed here and
    /// answered as the router answers them; once the connection sends a GET, its POSTs are
    /// taken after NIO's codec (`InlineAppendHandler`) and none is framed again.
    @Test func postsAreFramedUntilTheConnectionSendsAnythingElse() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            #expect(try await http.request("PUT", Self.path, headers: Self.text).status == 201)
            let connection = try RawHTTP(port: http.port)
            try await connection.send(Self.post("a") + Self.post("b", "Producer-Id: p\r\nProducer-Epoch: 0\r\nProducer-Seq: 0\r\n") + Self.post("c"))
            let pipelined = [try await connection.answer(), try await connection.answer(), try await connection.answer()]
            #expect(pipelined.map(\.status) == [204, 200, 204])
            #expect(pipelined.map { $0.headers["stream-next-offset"] } == (1...3).map { String(format: "%016d_0000000000000000", $0) })
            #expect(pipelined[1].headers["producer-seq"] == "0")
            #expect(pipelined[0].headers["content-length"] == nil, "a 204 has no Content-Length, as NIO's encoder writes it")
            #expect(pipelined[1].headers["content-length"] == "0")
            try await connection.send(Self.post("x", to: "/v1/stream/missing"))
            let refused = try await connection.answer()
            #expect(refused.status == 404)
            #expect(refused.headers["content-type"] == "application/json")
            #expect(refused.body.contains("no stream named 'missing'"))
            #expect(try await Self.metric(http, "replay_http_appends_framed_total") == 4)

            try await connection.send("GET \(Self.path)?offset=-1 HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try await connection.answer().body == "abc")
            try await connection.send(Self.post("d"))
            #expect(try await connection.answer().status == 204)
            #expect(try await Self.metric(http, "replay_http_appends_framed_total") == 4)
            #expect(try await Self.metric(http, "replay_http_appends_inline_total") == 5)
            #expect(try await http.request("GET", Self.path + "?offset=-1").text == "abcd")
            let route = #"hb_requests{http_route="/v1/stream/**",http_request_method="POST",http_response_status_code=""#
            #expect(try await Self.metric(http, route + #"204"}"#) == 3)
            #expect(try await Self.metric(http, route + #"404"}"#) == 1)
        }
    }

    /// A POST framed some other way (chunked, with `Expect`, in HTTP/1.0) or one the head
    /// reader does not read (a `Content-Length` twice) goes to NIO's decoder from its first
    /// byte, each on a connection of its own, and is answered as before; nothing is framed.
    @Test func whatIsNotReadHereGoesToNIOWhole() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            #expect(try await http.request("PUT", Self.path, headers: Self.text).status == 201)
            let start = "POST \(Self.path) HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\n"
            let chunked = try RawHTTP(port: http.port)
            try await chunked.send(start + "Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n")
            #expect(try await chunked.answer().status == 204)

            let expecting = try RawHTTP(port: http.port)
            try await expecting.send(start + "Expect: 100-continue\r\nContent-Length: 1\r\n\r\n")
            try await expecting.send("b")
            #expect(try await expecting.answer().status == 204)

            let old = try RawHTTP(port: http.port)
            try await old.send("POST \(Self.path) HTTP/1.0\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nc")
            #expect(try await old.answer().status == 204)

            let twice = try RawHTTP(port: http.port)
            try await twice.send(start + "Content-Length: 1\r\nContent-Length: 1\r\n\r\nd")
            #expect(try await twice.answer().status == 400)
            #expect(try await twice.isClosed())

            #expect(try await http.request("GET", Self.path + "?offset=-1").text == "abc")
            #expect(try await Self.metric(http, "replay_http_appends_framed_total") == 0)
        }
    }

    /// A client gone mid-body, or whose input ends there, leaves no request active; what it
    /// sent of its POST is not appended.
    @Test func aPostCutShortLeavesNothingActive() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            #expect(try await http.request("PUT", Self.path, headers: Self.text).status == 201)
            let active = #"http_server_active_requests{http_request_method="POST"}"#
            let half = Self.post("0123456789").dropLast(6)
            do {
                let gone = try RawHTTP(port: http.port)
                try await gone.send(String(half))
                try await eventually("the POST framed, its body half there") { try await Self.metric(http, active) == 1 }
            }
            try await eventually("the POST no longer active") { try await Self.metric(http, active) == 0 }
            let ended = try RawHTTP(port: http.port)
            try await ended.send(String(half))
            try await eventually("the POST framed, its body half there") { try await Self.metric(http, active) == 1 }
            try await ended.finishSending()
            #expect(try await ended.answer().status == 400, "NIO's decoder ends the request cut short")
            try await eventually("the POST no longer active") { try await Self.metric(http, active) == 0 }
            #expect(try await http.request("GET", Self.path + "?offset=-1").text == "")
            #expect(try await Self.metric(http, "replay_http_appends_framed_total") == 0)
        }
    }

    /// A POST to a stream past its expiry goes to the router, whole, which deletes the
    /// stream and answers 404; the name can be created again.
    @Test func aPostToAnExpiredStreamGoesToTheRouter() async throws {
        try await withHTTP { (_: TestDaemon, http: HTTPTestClient) async throws in
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let expiresAt = formatter.string(from: Date().addingTimeInterval(1))
            #expect(try await http.request("PUT", Self.path, headers: Self.text + [("Stream-Expires-At", expiresAt)]).status == 201)
            var status = 204
            for _ in 0..<500 where status != 404 {
                let connection = try RawHTTP(port: http.port)
                try await connection.send(Self.post("e"))
                status = try await connection.answer().status
                if status != 404 { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(status == 404)
            #expect(try await http.request("PUT", Self.path, headers: Self.text).status == 201)
            #expect(try await http.request("GET", Self.path + "?offset=-1").text == "")
        }
    }
}
