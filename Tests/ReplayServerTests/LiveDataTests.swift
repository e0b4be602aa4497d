import Foundation
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
}
