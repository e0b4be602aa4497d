import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

/// What the live view reads, over real HTTP: a page of the stream list with its total,
/// each stream's delivered count and readers, and the tail's events with their sequence
/// numbers, times and payloads, within a token's scopes.
@Suite("replayd: the live view's data", .timeLimit(.minutes(3)))
struct LiveDataTests {
    @Test func theStreamListComesAPageAtATimeWithItsTotal() async throws {
        try await withHTTP { daemon, http in
            try await withWireClient(daemon.socketPath) { client in
                for name in ["a/1", "a/2", "a/3", "b/1"] { _ = try await client.publish(name, ["x"]) }
            }
            let page = try await http.request("GET", "/v1/streams?q=a/&offset=1&limit=1")
            #expect(page.status == 200)
            #expect(page["Replay-Stream-Count"] == "3")
            let entries = try JSONSerialization.jsonObject(with: page.body) as? [[String: Any]] ?? []
            #expect(entries.map { $0["name"] as? String } == ["a/2"])
            #expect(entries.first?["delivered"] as? Int == 0)
            #expect(try await http.request("GET", "/v1/streams?limit=0").status == 400)

            // Live: the page again every second, over SSE.
            let live = try await http.stream("/v1/streams?live=sse&q=b/") { $0.contains("\n\n") }
            #expect(live.text.hasPrefix("event: streams\ndata: {\"total\":1,\"streams\":[{"), "\(live.text)")
        }
    }

    @Test func theTailCarriesSequenceNumbersTimesAndPayloads() async throws {
        try await withHTTP { daemon, http in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("t", ["one", "two\nlines", "{\"n\":3}"])
            }
            let tail = try await http.stream("/v1/tail/t?from=2") { $0.contains("upToDate") }
            let lines = tail.text.split(separator: "\n")
            #expect(lines.first == "event: events")
            let data = try #require(lines.dropFirst().first?.dropFirst("data: ".count))
            let events = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [[String: Any]] ?? []
            #expect(events.map { $0["seq"] as? Int } == [2, 3])
            #expect(events.map { $0["text"] as? String } == ["two\nlines", "{\"n\":3}"])
            #expect((events.first?["time"] as? String)?.hasSuffix("Z") == true)
            #expect(tail.text.contains("event: control\ndata: {\"next\":4,\"upToDate\":true}"))
            // Deliveries count towards the stream's delivery rate.
            let listed = try JSONSerialization.jsonObject(with: try await http.request("GET", "/v1/streams").body) as? [[String: Any]] ?? []
            #expect(listed.first?["delivered"] as? Int == 2)
            #expect(try await http.request("GET", "/v1/tail/nothing").status == 404)
        }
    }

    @Test func theTailKeepsToTheTokensScopes() async throws {
        try await withTemporaryDirectory { directory in
            let keys = try TokenTests.keyFile(in: directory)
            try await withHTTP(arguments: ["--auth-keys", keys]) { daemon, http in
                try await withWireClient(daemon.socketPath) { client in
                    _ = try await client.publish("tenant-a/x", ["a"])
                    _ = try await client.publish("tenant-b/x", ["b"])
                }
                let alice = try await TokenTests.mint(keys, subject: "alice", scopes: ["tenant-a/**=read"])
                #expect(try await http.request("GET", "/v1/tail/tenant-b/x", headers: TokenTests.bearer(alice)).status == 403)
                #expect(try await http.request("GET", "/v1/tail/tenant-a/x").status == 401)
                let mine = try await http.stream("/v1/tail/tenant-a/x", headers: TokenTests.bearer(alice)) { $0.contains("upToDate") }
                #expect(mine.text.contains("\"text\":\"a\""))
            }
        }
    }

    /// INFO, CONSUMERS and GROUPS on the socket, the page's list and /metrics show one
    /// stream with the same figures under the same names: they are one view of it.
    @Test func everyViewShowsAStreamWithTheSameFiguresAndNames() async throws {
        try await withHTTP { daemon, http in
            try await withWireClient(daemon.socketPath) { client in
                for n in 1...5 { try await client.send(.publish(stream: "orders", payload: ByteBuffer(string: "\(n)"))) }
                _ = try await client.frames(5)
                // A durable consumer that acknowledged 2 of 5, and a group member holding one event.
                try await client.send("SUB orders c from=1 durable=audit\r\nACK c 2\r\nSUB orders g all group=workers member=m1 max_pending=1\r\n")
                var frames: [ServerFrame] = []
                while frames.filter({ if case .event(_, "g", _, _, _, _, _, _) = $0 { true } else { false } }).isEmpty {
                    frames.append(try await client.expectFrame())
                }
                try await client.send("INFO orders\r\nCONSUMERS orders\r\nGROUPS orders\r\n")
                var answers: [[String: Any]] = []
                var lists: [[[String: Any]]] = []
                while answers.count + lists.count < 3 {
                    switch try await client.expectFrame() {
                    case .info(let json): answers.append(try JSONSerialization.jsonObject(with: Data(json.readableBytesView)) as? [String: Any] ?? [:])
                    case .list(let json): lists.append(try JSONSerialization.jsonObject(with: Data(json.readableBytesView)) as? [[String: Any]] ?? [])
                    default: continue
                    }
                }
                let info = try #require(answers.first)
                let (consumers, groups) = (lists[0], lists[1])
                // While the member is connected: every view sees it.
                let page = try JSONSerialization.jsonObject(with: try await http.request("GET", "/v1/streams").body) as? [[String: Any]]
                let entry = try #require(page?.first)
                for key in ["name", "count", "first_seq", "last_seq", "bytes", "capacity", "created_at", "terminal"] {
                    #expect("\(entry[key] ?? "none")" == "\(info[key] ?? "none")", "\(key)")
                }
                #expect(entry["events"] == nil)
                let pageConsumer = try #require((entry["consumers"] as? [[String: Any]])?.first)
                #expect(pageConsumer["name"] as? String == "audit" && pageConsumer["lag"] as? Int == 3)
                #expect(consumers.first?["lag"] as? Int == 3 && consumers.first?["acked_seq"] as? Int == 2)
                let pageGroup = try #require((entry["groups"] as? [[String: Any]])?.first)
                #expect(pageGroup["members"] as? [String] == ["m1"])
                #expect(groups.first?["members"] as? [String] == ["m1"])
                #expect(pageGroup["lag"] as? Int == groups.first?["lag"] as? Int)
                #expect(pageGroup["pending"] as? Int == 1)
                let metrics = try await http.request("GET", "/metrics").text
                #expect(metrics.contains("replay_consumer_lag_events{stream=\"orders\",consumer=\"audit\"} 3"), "\(metrics)")
                #expect(metrics.contains("replay_group_pending_events{stream=\"orders\",group=\"workers\"} 1"))
            }
        }
    }
}
