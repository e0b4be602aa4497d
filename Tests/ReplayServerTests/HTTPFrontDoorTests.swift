import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

/// Starts the daemon with `--http 127.0.0.1:0` and hands over a client for the port it bound.
func withHTTP<T: Sendable>(
    arguments: [String] = [], _ body: (TestDaemon, HTTPTestClient) async throws -> T
) async throws -> T {
    try await withDaemon(arguments: ["--http", "127.0.0.1:0"] + arguments) { daemon in
        try await body(daemon, try HTTPTestClient(address: try await daemon.httpAddress()))
    }
}

/// The Durable Streams HTTP front door, over real HTTP, against the real daemon: every
/// operation, both protocols on one stream, a restart, closure, expiry and SSE resume.
@Suite("replayd: the Durable Streams HTTP front door", .timeLimit(.minutes(5)))
struct HTTPFrontDoorTests {
    @Test func everyOperationOnOneStream() async throws {
        try await withHTTP { _, http in
            let path = "/v1/stream/orders"
            let created = try await http.request("PUT", path, headers: [("Content-Type", "text/plain")], body: "a")
            #expect(created.status == 201)
            #expect(created["Location"] == "http://\(http.host):\(http.port)\(path)")
            #expect(created["Stream-Next-Offset"] == "0000000000000001_0000000000000000")
            // Declaring it again with the same settings is fine; with others, a conflict.
            #expect(try await http.request("PUT", path, headers: [("Content-Type", "text/plain")]).status == 200)
            #expect(try await http.request("PUT", path, headers: [("Content-Type", "application/json")]).status == 409)

            let appended = try await http.request("POST", path, headers: [("Content-Type", "text/plain")], body: "b")
            #expect(appended.status == 204)
            #expect(appended["Stream-Next-Offset"] == "0000000000000002_0000000000000000")

            let all = try await http.request("GET", path + "?offset=-1")
            #expect(all.status == 200)
            #expect(all.text == "ab")
            #expect(all["Content-Type"] == "text/plain")
            #expect(all["Stream-Up-To-Date"] == "true")
            #expect(all["Stream-Closed"] == nil)
            #expect(all["X-Content-Type-Options"] == "nosniff")
            let etag = try #require(all["ETag"])
            #expect(try await http.request("GET", path + "?offset=-1", headers: [("If-None-Match", etag)]).status == 304)

            let after = try await http.request("GET", path + "?offset=0000000000000001_0000000000000000")
            #expect(after.text == "b")
            let head = try await http.request("HEAD", path)
            #expect(head.status == 200)
            #expect(head["Stream-Next-Offset"] == "0000000000000002_0000000000000000")
            #expect(head["Cache-Control"] == "no-store")

            // Close with a final append; then appends are refused, reads end with EOF.
            let closed = try await http.request("POST", path, headers: [("Content-Type", "text/plain"), ("Stream-Closed", "true")], body: "c")
            #expect(closed.status == 204)
            #expect(closed["Stream-Closed"] == "true")
            let refused = try await http.request("POST", path, headers: [("Content-Type", "text/plain")], body: "d")
            #expect(refused.status == 409)
            #expect(refused["Stream-Closed"] == "true")
            #expect(refused["Stream-Next-Offset"] == "0000000000000003_0000000000000000")
            let end = try await http.request("GET", path + "?offset=0000000000000003_0000000000000000")
            #expect(end.status == 200)
            #expect(end.text.isEmpty)
            #expect(end["Stream-Closed"] == "true")
            // The etag changed with the closure, so a cached copy cannot hide it.
            #expect(try await http.request("GET", path + "?offset=-1", headers: [("If-None-Match", etag)]).status == 200)

            #expect(try await http.request("DELETE", path).status == 204)
            #expect(try await http.request("GET", path).status == 404)
            #expect(try await http.request("DELETE", path).status == 404)
        }
    }

    /// One log, two protocols: what HTTP appends a socket subscriber gets live, what the
    /// socket publishes an HTTP long-poll gets, on a name with '/' segments in both.
    @Test func bothProtocolsShareOneStream() async throws {
        try await withHTTP { daemon, http in
            let name = "shop/eu/orders"
            #expect(try await http.request("PUT", "/v1/stream/\(name)", headers: [("Content-Type", "text/plain")]).status == 201)
            try await withWireClient(daemon.socketPath) { socket in
                try await socket.subscribe(name, sid: "s")
                #expect(try await http.request("POST", "/v1/stream/\(name)", headers: [("Content-Type", "text/plain")], body: "from-http").status == 204)
                let events = try await socket.events(1)
                #expect(events.map(\.0) == [1])
                #expect(events.map(\.1) == ["from-http"])

                async let poll = http.request("GET", "/v1/stream/\(name)?offset=0000000000000001_0000000000000000&live=long-poll")
                // From another connection: this one's subscription would interleave its event.
                let sequences = try await withWireClient(daemon.socketPath) { publisher in
                    try await publisher.publish(name, ["from-socket"])
                }
                #expect(sequences == [2])
                let polled = try await poll
                #expect(polled.status == 200)
                #expect(polled.text == "from-socket")
                #expect(polled["Stream-Next-Offset"] == "0000000000000002_0000000000000000")
                #expect(polled["Stream-Cursor"] != nil)
            }
            // A stream made over the socket has no content type: HTTP serves it as bytes.
            try await withWireClient(daemon.socketPath) { socket in
                _ = try await socket.publish("plain", ["x"])
            }
            let plain = try await http.request("GET", "/v1/stream/plain")
            #expect(plain["Content-Type"] == "application/octet-stream")
            #expect(plain.text == "x")
        }
    }

    @Test func aRestartKeepsStreamsOffsetsAndClosure() async throws {
        try await withTemporaryDirectory { directory in
            let arguments = ["--http", "127.0.0.1:0"]
            var daemon = try await TestDaemon.start(in: directory, arguments: arguments)
            var http = try HTTPTestClient(address: try await daemon.httpAddress())
            _ = try await http.request(
                "PUT", "/v1/stream/log", headers: [("Content-Type", "application/json"), ("Stream-TTL", "3600")], body: #"[{"n":1},{"n":2}]"#)
            _ = try await http.request("PUT", "/v1/stream/done", headers: [("Content-Type", "text/plain"), ("Stream-Closed", "true")], body: "final")
            await daemon.stop()

            daemon = try await TestDaemon.start(in: directory, arguments: arguments)
            http = try HTTPTestClient(address: try await daemon.httpAddress())
            let log = try await http.request("GET", "/v1/stream/log?offset=-1")
            #expect(log.text == #"[{"n":1},{"n":2}]"#)
            #expect(log["Stream-Next-Offset"] == "0000000000000002_0000000000000000")
            let head = try await http.request("HEAD", "/v1/stream/log")
            #expect(head["Stream-TTL"] == "3600")
            #expect(head["Content-Type"] == "application/json")
            let appended = try await http.request("POST", "/v1/stream/log", headers: [("Content-Type", "application/json")], body: #"{"n":3}"#)
            #expect(appended["Stream-Next-Offset"] == "0000000000000003_0000000000000000")
            let done = try await http.request("GET", "/v1/stream/done")
            #expect(done.text == "final")
            #expect(done["Stream-Closed"] == "true")
            await daemon.stop()
        }
    }

    /// An SSE reader that leaves and comes back with its last offset gets exactly what it
    /// missed: no duplicate, no gap. A closed stream ends the SSE response.
    @Test func sseResumesFromItsLastOffset() async throws {
        try await withHTTP { _, http in
            let path = "/v1/stream/tail"
            _ = try await http.request("PUT", path, headers: [("Content-Type", "text/plain")], body: "one\n")
            let first = try await http.stream(path + "?offset=-1&live=sse") { $0.contains("\"upToDate\":true") }
            #expect(first["Content-Type"] == "text/event-stream")
            #expect(first.text.contains("event: data\ndata:one\n"))
            let offset = try #require(Self.lastOffset(in: first.text))
            #expect(offset == "0000000000000001_0000000000000000")

            _ = try await http.request("POST", path, headers: [("Content-Type", "text/plain")], body: "two\n")
            _ = try await http.request("POST", path, headers: [("Content-Type", "text/plain"), ("Stream-Closed", "true")], body: "three\n")
            let resumed = try await http.stream(path + "?offset=\(offset)&live=sse") { $0.contains("streamClosed") }
            #expect(!resumed.text.contains("one"))
            #expect(resumed.text.contains("data:two\n"))
            #expect(resumed.text.contains("data:three\n"))
            #expect(resumed.text.contains(#""streamNextOffset":"0000000000000003_0000000000000000""#))
            #expect(resumed.text.contains(#""streamClosed":true"#))

            // Binary streams travel as base64.
            _ = try await http.request("PUT", "/v1/stream/bin", headers: [("Content-Type", "application/octet-stream")], bytes: Data([0, 1, 2, 255]))
            let binary = try await http.stream("/v1/stream/bin?offset=-1&live=sse") { $0.contains("upToDate") }
            #expect(binary["Stream-SSE-Data-Encoding"] == "base64")
            #expect(binary.text.contains("data:AAEC/w==\n"))
        }
    }

    static func lastOffset(in sse: String) -> String? {
        sse.components(separatedBy: "\"streamNextOffset\":\"").last.map { String($0.prefix(33)) }
    }

    @Test func jsonModeKeepsMessagesApart() async throws {
        try await withDoor { http in
            let path = "/v1/stream/json"
            #expect(try await http.request("PUT", path, headers: [("Content-Type", "application/json")], body: "[]").status == 201)
            #expect(try await http.request("POST", path, headers: [("Content-Type", "application/json")], body: #"[{"a": [1, 2]}, "x,]"]"#).status == 204)
            #expect(try await http.request("POST", path, headers: [("Content-Type", "application/json")], body: "[[3]]").status == 204)
            let all = try await http.request("GET", path + "?offset=-1")
            #expect(all.text == #"[{"a": [1, 2]},"x,]",[3]]"#)
            #expect(all["Stream-Next-Offset"] == "0000000000000003_0000000000000000")
            #expect(try await http.request("POST", path, headers: [("Content-Type", "application/json")], body: "[]").status == 400)
            #expect(try await http.request("POST", path, headers: [("Content-Type", "application/json")], body: "{nope").status == 400)
            let now = try await http.request("GET", path + "?offset=now")
            #expect(now.text == "[]")
            #expect(now["Stream-Next-Offset"] == "0000000000000003_0000000000000000")
        }
    }

    @Test func idempotentProducersOverHTTP() async throws {
        try await withDoor { http in
            let path = "/v1/stream/pay"
            _ = try await http.request("PUT", path, headers: [("Content-Type", "text/plain")])
            func send(_ epoch: Int, _ seq: Int, _ body: String) async throws -> HTTPTestClient.Response {
                try await http.request(
                    "POST", path,
                    headers: [("Content-Type", "text/plain"), ("Producer-Id", "billing"), ("Producer-Epoch", "\(epoch)"), ("Producer-Seq", "\(seq)")],
                    body: body)
            }
            #expect(try await send(0, 0, "a").status == 200)
            #expect(try await send(0, 1, "b").status == 200)
            let retry = try await send(0, 0, "a")
            #expect(retry.status == 204)
            #expect(retry["Producer-Seq"] == "1")
            let gap = try await send(0, 5, "x")
            #expect(gap.status == 409)
            #expect(gap["Producer-Expected-Seq"] == "2")
            #expect(try await send(1, 0, "c").status == 200)
            let zombie = try await send(0, 2, "z")
            #expect(zombie.status == 403)
            #expect(zombie["Producer-Epoch"] == "1")
            #expect(try await http.request("GET", path).text == "abc")
            let partial = try await http.request("POST", path, headers: [("Content-Type", "text/plain"), ("Producer-Id", "p")], body: "x")
            #expect(partial.status == 400)
            // Stream-Seq must rise, byte-wise.
            #expect(try await http.request("POST", path, headers: [("Content-Type", "text/plain"), ("Stream-Seq", "002")], body: "d").status == 204)
            #expect(try await http.request("POST", path, headers: [("Content-Type", "text/plain"), ("Stream-Seq", "001")], body: "e").status == 409)
        }
    }

    /// A fixed expiry: the stream is gone once it passes (polled, not timed), and the name
    /// can be created again.
    @Test func anExpiredStreamIsGone() async throws {
        try await withDoor { http in
            let path = "/v1/stream/brief"
            let soon = Date().addingTimeInterval(1)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let expiresAt = formatter.string(from: soon)
            #expect(try await http.request("PUT", path, headers: [("Content-Type", "text/plain"), ("Stream-Expires-At", expiresAt)], body: "x").status == 201)
            let later = formatter.string(from: soon.addingTimeInterval(3600))
            _ = try await http.request("PUT", "/v1/stream/later", headers: [("Content-Type", "text/plain"), ("Stream-Expires-At", later)])
            #expect(try await http.request("HEAD", "/v1/stream/later")["Stream-Expires-At"] == later)
            var status = 200
            for _ in 0..<500 where status != 404 {
                status = try await http.request("HEAD", path).status
                if status != 404 { try await Task.sleep(for: .milliseconds(20)) }
            }
            #expect(status == 404)
            #expect(try await http.request("PUT", path, headers: [("Content-Type", "text/plain")]).status == 201)
        }
    }

    @Test func badInputGetsClearErrors() async throws {
        try await withDoor(arguments: ["--max-payload", "1000", "--http-token", "sesame", "--long-poll-timeout", "0.2"]) { http in
            let auth = ("Authorization", "Bearer sesame")
            let path = "/v1/stream/guarded"
            let anonymous = try await http.request("PUT", path, headers: [("Content-Type", "text/plain")])
            #expect(anonymous.status == 401)
            #expect(anonymous["WWW-Authenticate"] != nil)
            #expect(try await http.request("PUT", path, headers: [auth, ("Content-Type", "text/plain")]).status == 201)
            // Reads need no token unless --http-token-reads.
            #expect(try await http.request("GET", path).status == 200)
            let big = String(repeating: "x", count: 1001)
            #expect(try await http.request("POST", path, headers: [auth, ("Content-Type", "text/plain")], body: big).status == 413)
            #expect(try await http.request("POST", path, headers: [auth, ("Content-Type", "text/plain")], body: "").status == 400)
            #expect(try await http.request("POST", path, headers: [auth], body: "no type").status == 400)
            #expect(try await http.request("POST", path, headers: [auth, ("Content-Type", "image/png")], body: "x").status == 409)
            #expect(try await http.request("GET", path + "?offset=abc").status == 400)
            #expect(try await http.request("GET", path + "?offset=1&offset=2").status == 400)
            #expect(try await http.request("GET", path + "?offset=-1&live=forever").status == 400)
            #expect(try await http.request("PUT", "/v1/stream/t", headers: [auth, ("Stream-TTL", "01")]).status == 400)
            #expect(
                try await http.request("PUT", "/v1/stream/t", headers: [auth, ("Stream-TTL", "5"), ("Stream-Expires-At", "2030-01-01T00:00:00Z")]).status == 400
            )
            #expect(try await http.request("PUT", "/v1/stream/bad//name", headers: [auth]).status == 400)
            // A name whose escapes are not UTF-8 is a bad request that says why, on every method.
            for method in ["PUT", "POST", "GET", "HEAD", "DELETE"] {
                let invalid = try await http.request(method, "/v1/stream/a%FFb", headers: [auth, ("Content-Type", "text/plain")], body: "x")
                #expect(invalid.status == 400, "\(method)")
                if method != "HEAD" { #expect(invalid.text.contains("not valid percent-encoded UTF-8"), "\(method): \(invalid.text)") }
            }
            // Numbers at the edge of their types are clear errors or plain answers, never a crash.
            #expect(try await http.request("PUT", "/v1/stream/t", headers: [auth, ("Stream-TTL", "9223372036854775807")]).status == 400)
            #expect(try await http.request("PUT", "/v1/stream/t", headers: [auth, ("Stream-TTL", "99999999999999999999")]).status == 400)
            let farCursor = try await http.request("GET", path + "?offset=-1&live=long-poll&cursor=18446744073709551615")
            #expect(farCursor.status == 200 || farCursor.status == 204)
            #expect(try await http.request("GET", path + "?offset=99999999999999999999_0000000000000000").status == 400)
            #expect(try await http.request("GET", "/v1/stream/missing").status == 404)
            // Nothing was stored by the refused requests.
            #expect(try await http.request("GET", path).text.isEmpty)
        }
    }

    /// A fork reads its source's prefix (never copied) and then its own events, over HTTP
    /// and over the socket alike; a deleted source stays for it, and goes with it.
    @Test func forksShareTheirSourcesPrefix() async throws {
        try await withHTTP { daemon, http in
            let text = [("Content-Type", "text/plain")]
            _ = try await http.request("PUT", "/v1/stream/src", headers: text, body: "a")
            _ = try await http.request("POST", "/v1/stream/src", headers: text, body: "b")
            _ = try await http.request("POST", "/v1/stream/src", headers: text, body: "cde")
            let fork = try await http.request(
                "PUT", "/v1/stream/fork",
                headers: [("Stream-Forked-From", "/v1/stream/src"), ("Stream-Fork-Offset", Self.offset(1)), ("Stream-Fork-Sub-Offset", "0")])
            #expect(fork.status == 201)
            #expect(fork["Content-Type"] == "text/plain")
            #expect(fork["Stream-Next-Offset"] == Self.offset(1))
            _ = try await http.request("POST", "/v1/stream/fork", headers: text, body: "X")
            _ = try await http.request("POST", "/v1/stream/src", headers: text, body: "f")
            #expect(try await http.request("GET", "/v1/stream/fork").text == "aX")
            #expect(try await http.request("GET", "/v1/stream/src").text == "abcdef")
            try await withWireClient(daemon.socketPath) { socket in
                try await socket.subscribe("fork", sid: "f")
                let events = try await socket.events(2)
                #expect(events.map(\.0) == [1, 2])
                #expect(events.map(\.1) == ["a", "X"])
            }

            // Two bytes into event 3 ("cde"): the fork's own event 3 is "cd".
            let partial = try await http.request(
                "PUT", "/v1/stream/part",
                headers: [("Stream-Forked-From", "/v1/stream/src"), ("Stream-Fork-Offset", Self.offset(2)), ("Stream-Fork-Sub-Offset", "2")])
            #expect(partial.status == 201)
            #expect(try await http.request("GET", "/v1/stream/part").text == "abcd")
            let overshoot = try await http.request(
                "PUT", "/v1/stream/over",
                headers: [("Stream-Forked-From", "/v1/stream/src"), ("Stream-Fork-Offset", Self.offset(2)), ("Stream-Fork-Sub-Offset", "4")])
            #expect(overshoot.status == 400)

            // Deleting the source while forks read from it: gone for clients, kept for forks.
            #expect(try await http.request("DELETE", "/v1/stream/src").status == 204)
            #expect(try await http.request("GET", "/v1/stream/src").status == 410)
            #expect(try await http.request("PUT", "/v1/stream/src", headers: text).status == 409)
            #expect(try await http.request("GET", "/v1/stream/fork").text == "aX")
            #expect(try await http.request("DELETE", "/v1/stream/fork").status == 204)
            #expect(try await http.request("GET", "/v1/stream/src").status == 410, "the other fork still reads from it")
            #expect(try await http.request("DELETE", "/v1/stream/part").status == 204)
            #expect(try await http.request("GET", "/v1/stream/src").status == 404, "collected with its last fork")
            #expect(try await http.request("PUT", "/v1/stream/src", headers: text).status == 201)
        }
    }

    /// A consumer group's figures at /metrics: pending, delivered, redelivered, lag.
    @Test func metricsDescribeConsumerGroups() async throws {
        try await withHTTP { daemon, http in
            try await withWireClient(daemon.socketPath) { socket in
                _ = try await socket.publish("jobs", ["a", "b", "c"])
                try await socket.send(.subscribeGroup(stream: "jobs", sid: "w", start: .all, options: GroupOptions(group: "g", maxPending: 2)))
                #expect(try await socket.expectFrame() == .ok)
                _ = try await socket.events(2)
                try await socket.send(.nack(sid: "w", sequence: 1, delay: 3600))
                #expect(try await socket.expectFrame() == .ok)
                // 2 is held and 1 waits an hour; 3 is handed out in 1's place.
                _ = try await socket.events(1)
                let lines = Set(try await http.request("GET", "/metrics").text.split(separator: "\n").map(String.init))
                for expected in [
                    #"replay_group_pending_events{stream="jobs",group="g"} 3.0"#,
                    #"replay_group_delivered_events{stream="jobs",group="g"} 3.0"#,
                    #"replay_group_redelivered_events{stream="jobs",group="g"} 0.0"#,
                    #"replay_group_dead_lettered_events{stream="jobs",group="g"} 0.0"#,
                    #"replay_group_lag_events{stream="jobs",group="g"} 0.0"#,
                ] {
                    #expect(lines.contains(expected), "missing \(expected)")
                }
                #expect(lines.contains { $0.hasPrefix(#"replay_group_oldest_pending_seconds{stream="jobs",group="g"} "#) })
            }
        }
    }

    static func offset(_ sequence: Int) -> String {
        String(format: "%016d_%016d", sequence, 0)
    }

    /// Prometheus text at /metrics: what was published and delivered, commits, connections,
    /// per-stream figures, a durable consumer's lag, and the HTTP requests themselves.
    @Test func metricsDescribeTheDaemon() async throws {
        try await withHTTP { daemon, http in
            _ = try await http.request("PUT", "/v1/stream/m", headers: [("Content-Type", "text/plain")], body: "abc")
            #expect(try await http.request("GET", "/v1/stream/absent").status == 404)
            try await withWireClient(daemon.socketPath) { socket in
                _ = try await socket.publish("m", ["de", "f"])
                try await socket.send(.subscribeDurable(stream: "m", sid: "d", start: .all, consumer: "audit"))
                #expect(try await socket.expectFrame() == .ok)
                _ = try await socket.events(3)
                try await socket.send(.ack(sid: "d", sequence: 1))
                #expect(try await socket.expectFrame() == .ok)

                let metrics = try await http.request("GET", "/metrics")
                #expect(metrics.status == 200)
                #expect(metrics["Content-Type"]?.hasPrefix("text/plain") == true)
                let lines = Set(metrics.text.split(separator: "\n").map(String.init))
                for expected in [
                    "replay_events_published_total 3", "replay_bytes_published_total 6",
                    #"replay_stream_last_seq{stream="m"} 3.0"#, #"replay_stream_retained_events{stream="m"} 3.0"#,
                    #"replay_consumer_lag_events{stream="m",consumer="audit"} 2.0"#,
                    "replay_connections 1.0", "replay_subscriptions 1.0",
                    #"hb_requests{http_route="/v1/stream/**",http_request_method="PUT",http_response_status_code="201"} 1"#,
                    #"hb_requests{http_route="/v1/stream/**",http_request_method="GET",http_response_status_code="404"} 1"#,
                    #"hb_request_errors{http_route="/v1/stream/**",http_request_method="GET",error_type="404"} 1"#,
                ] {
                    let found = lines.contains(expected)
                    #expect(found, "missing \(expected)")
                }
                #expect(lines.contains { $0.hasPrefix(#"http_server_request_duration_count{http_route="/v1/stream/**",http_request_method="PUT""#) })
                #expect(!lines.contains { $0.hasPrefix("hb_request_errors") && $0.contains("201") }, "a success is not an error")
                #expect(lines.contains { $0.hasPrefix("replay_commit_duration_seconds_count ") })
                #expect(lines.contains { $0.hasPrefix("replay_commit_batch_requests_count ") })
                #expect(lines.contains { $0.hasPrefix("replay_events_delivered_total ") })
            }
            _ = try await http.request("DELETE", "/v1/stream/m")
            #expect(!(try await http.request("GET", "/metrics").text.contains(#"stream="m""#)), "a deleted stream's gauges go")
        }
    }

    /// 1,000 long-polls parked at the tail cost a socket and a parked cursor each, not a
    /// buffer: descriptors grow by about one per poll and memory by a bounded amount; one
    /// append then answers every one of them.
    @Test func aThousandIdleLongPollsStayBounded() async throws {
        try await withHTTP(arguments: ["--long-poll-timeout", "120"]) { daemon, http in
            let path = "/v1/stream/quiet"
            _ = try await http.request("PUT", path, headers: [("Content-Type", "text/plain")], body: "x")
            let tail = Self.offset(1)
            let descriptorsBefore = daemon.openDescriptors
            let memoryBefore = daemon.residentBytes
            let polls = 1000
            try await withThrowingTaskGroup(of: HTTPTestClient.Response.self) { group in
                for _ in 0..<polls {
                    group.addTask { try await http.request("GET", path + "?offset=\(tail)&live=long-poll") }
                }
                // Wait until every poll is parked (a readiness poll on the daemon's own count).
                try await eventually("\(polls) parked long-polls") {
                    let metrics = try await http.request("GET", "/metrics").text
                    return metrics.contains("replay_http_long_polls \(polls).0")
                }
                let descriptors = daemon.openDescriptors - descriptorsBefore
                let memory = daemon.residentBytes - memoryBefore
                // About one socket per poll (the requests before them may still be closing).
                #expect(abs(descriptors - polls) < 50, "\(descriptors) descriptors for \(polls) polls")
                #expect(memory < memoryBudget(64 << 20), "\(memory >> 10) KiB for \(polls) polls")
                _ = try await http.request("POST", path, headers: [("Content-Type", "text/plain")], body: "y")
                var answered = 0
                for try await response in group {
                    #expect(response.status == 200)
                    #expect(response.text == "y")
                    answered += 1
                }
                #expect(answered == polls)
            }
        }
    }

    /// An SSE reader that stops reading holds its position, not a buffer: the daemon stops
    /// writing to it when its socket is full, and its memory does not grow with the stream.
    @Test func aStalledSSEReaderCostsAPositionNotABuffer() async throws {
        try await withHTTP(arguments: ["--max-payload", "2000000"]) { daemon, http in
            let path = "/v1/stream/big"
            _ = try await http.request("PUT", path, headers: [("Content-Type", "application/octet-stream")])
            let payload = Data(repeating: 0x61, count: 1_000_000)
            // A reader that takes the response's head, then stops reading.
            let (release, released) = AsyncStream<Void>.makeStream()
            let stalled = Task {
                try await http.stalledRead(path + "?offset=-1&live=sse") {
                    for await _ in release {}
                }
            }
            try await eventually("the SSE reader to connect") {
                try await http.request("GET", "/metrics").text.contains("replay_http_sse_readers 1.0")
            }
            let memoryBefore = daemon.residentBytes
            for _ in 0..<100 {
                #expect(try await http.request("POST", path, headers: [("Content-Type", "application/octet-stream")], bytes: payload).status == 204)
            }
            let growth = daemon.residentBytes - memoryBefore
            // 100 MB went into the stream (and SQLite); far less stays in the daemon.
            #expect(growth < memoryBudget(48 << 20), "resident memory grew by \(growth >> 20) MiB")
            #expect(try await http.request("HEAD", path)["Stream-Next-Offset"] == Self.offset(100))
            released.finish()
            #expect(try await stalled.value == 200)
        }
    }

    /// A body of unknown length (chunked) is one event like any other; its size is still
    /// held to --max-payload.
    @Test func chunkedBodiesAreAppendedWhole() async throws {
        try await withHTTP(arguments: ["--max-payload", "100"]) { _, http in
            let path = "/v1/stream/chunked"
            _ = try await http.request("PUT", path, headers: [("Content-Type", "text/plain")])
            let parts = ["one ", "two ", "three"].map { Data($0.utf8) }
            #expect(try await http.request("POST", path, headers: [("Content-Type", "text/plain")], chunks: parts).status == 204)
            let read = try await http.request("GET", path)
            #expect(read.text == "one two three")
            #expect(read["Stream-Next-Offset"] == Self.offset(1), "one request, one event")
            let big = Array(repeating: Data(repeating: 0x61, count: 60), count: 2)
            #expect(try await http.request("POST", path, headers: [("Content-Type", "text/plain")], chunks: big).status == 413)
        }
    }

    /// --http-token-reads: reads need the token too (the page and /metrics included).
    @Test func aTokenForReadsGuardsEveryRead() async throws {
        try await withHTTP(arguments: ["--http-token", "sesame", "--http-token-reads"]) { _, http in
            let auth = ("Authorization", "Bearer sesame")
            #expect(try await http.request("PUT", "/v1/stream/private", headers: [auth, ("Content-Type", "text/plain")], body: "x").status == 201)
            for path in ["/v1/stream/private", "/v1/streams", "/metrics", "/"] {
                let without = try await http.request("GET", path).status
                let with = try await http.request("GET", path, headers: [auth]).status
                #expect(without == 401, "\(path) without the token")
                #expect(with == 200, "\(path) with it")
            }
            #expect(try await http.request("GET", "/v1/stream/private", headers: [("Authorization", "Bearer wrong")]).status == 401)
            #expect(try await http.request("GET", "/v1/stream/private", headers: [auth])["Cache-Control"]?.hasPrefix("private") == true)
        }
    }

    /// An offset behind what retention keeps is 410 Gone (pointing at the oldest retained
    /// position); `-1` reads what is kept. A stream that failed over the socket reads as
    /// closed over HTTP, and says why.
    @Test func retentionAndFailureAsHTTPSeesThem() async throws {
        try await withHTTP { daemon, http in
            try await withWireClient(daemon.socketPath) { socket in
                try await socket.send(.create(stream: "short", options: CreateOptions(capacity: .count(2))))
                #expect(try await socket.expectFrame() == .ok)
                _ = try await socket.publish("short", ["1", "2", "3", "4", "5"])
                try await socket.send(.fail(stream: "short", message: "upstream lost"))
                #expect(try await socket.expectFrame() == .ok)
            }
            let gone = try await http.request("GET", "/v1/stream/short?offset=\(Self.offset(1))")
            #expect(gone.status == 410)
            #expect(gone["Stream-Next-Offset"] == Self.offset(3))
            let kept = try await http.request("GET", "/v1/stream/short?offset=-1")
            #expect(kept.text == "45")
            #expect(kept["Stream-Closed"] == "true")
            #expect(kept["Replay-Stream-Failed"] == "upstream lost")
            #expect(try await http.request("GET", "/v1/stream/short?offset=\(Self.offset(3))").text == "45")
            #expect(try await http.request("GET", "/v1/stream/short?offset=\(Self.offset(9))").status == 400, "beyond the tail")
            let ended = try await http.stream("/v1/stream/short?offset=\(Self.offset(5))&live=sse") { $0.contains("streamClosed") }
            #expect(ended.text.contains(#""streamClosed":true"#))
        }
    }

    /// A graceful shutdown does not wait for live reads: a parked long-poll is answered
    /// (204, up to date) and an SSE response ends, then the daemon stops cleanly. Were they
    /// waited for, the shutdown would hang past the suite's time limit (no clock is read).
    @Test func aShutdownEndsLiveReadsAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0", "--long-poll-timeout", "3600"])
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            _ = try await http.request("PUT", "/v1/stream/live", headers: [("Content-Type", "text/plain")])
            async let poll = http.request("GET", "/v1/stream/live?offset=now&live=long-poll")
            async let sse = http.stream("/v1/stream/live?offset=now&live=sse") { _ in false }
            try await eventually("both live reads to be parked") {
                let metrics = try await http.request("GET", "/metrics").text
                return metrics.contains("replay_http_long_polls 1.0") && metrics.contains("replay_http_sse_readers 1.0")
            }
            #expect(await daemon.stop() == 0)
            let polled = try await poll
            #expect(polled.status == 204)
            #expect(polled["Stream-Up-To-Date"] == "true")
            let streamed = try await sse
            #expect(streamed.status == 200)
            #expect(daemon.log.contains("replayd stopped"))
        }
    }

    /// With `--http-cors-origin '*'`, a page on any origin may write: its preflight is
    /// answered (before the token, which a preflight never carries) with the protocol's
    /// methods and headers, and every response lets it read the protocol's headers, with or
    /// without an Origin.
    @Test func aBrowserOnAnotherOriginMayWriteAndReadTheProtocolsHeaders() async throws {
        try await withDoor(arguments: ["--http-token", "sesame", "--http-cors-origin", "*"]) { http in
            let preflight = try await http.request(
                "OPTIONS", "/v1/stream/from-a-page",
                headers: [
                    ("Origin", "http://app.example"), ("Access-Control-Request-Method", "POST"),
                    ("Access-Control-Request-Headers", "content-type, producer-id, stream-seq"),
                ])
            #expect(preflight.status == 204)
            #expect(preflight["Access-Control-Allow-Origin"] == "*")
            let methods = try #require(preflight["Access-Control-Allow-Methods"])
            #expect(["PUT", "POST", "DELETE"].allSatisfy(methods.contains))
            let allowed = try #require(preflight["Access-Control-Allow-Headers"]).lowercased()
            #expect(["content-type", "producer-id", "stream-seq", "authorization"].allSatisfy(allowed.contains))

            let created = try await http.request(
                "PUT", "/v1/stream/from-a-page",
                headers: [("Origin", "http://app.example"), ("Authorization", "Bearer sesame"), ("Content-Type", "text/plain")])
            #expect(created.status == 201)
            #expect(created["Access-Control-Allow-Origin"] == "*")
            #expect(created["Access-Control-Expose-Headers"]?.contains("Stream-Next-Offset") == true)
            let read = try await http.request("GET", "/v1/stream/from-a-page?offset=-1")
            #expect(read["Access-Control-Expose-Headers"]?.contains("Stream-Next-Offset") == true, "without an Origin too")
        }
    }

    /// Content types are compared by media type: case, parameters and spaces aside, and
    /// vendor types whole.
    @Test func contentTypesAreComparedByMediaType() async throws {
        try await withDoor { http in
            let path = "/v1/stream/vendor"
            #expect(try await http.request("PUT", path, headers: [("Content-Type", "application/vnd.api+json")]).status == 201)
            let same = try await http.request("POST", path, headers: [("Content-Type", " Application/VND.api+JSON ; charset=utf-8")], body: "[1]")
            #expect(same.status == 204)
            let other = try await http.request("POST", path, headers: [("Content-Type", "application/vnd.api")], body: "[2]")
            #expect(other.status == 409)
        }
    }
}
