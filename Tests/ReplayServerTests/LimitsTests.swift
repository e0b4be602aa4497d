import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

/// Limits per client against the real daemon: request and byte rates on both doors (429
/// with Retry-After over HTTP, `-ERR rate_limited` on the socket) while another client is
/// served, and the cap on the streams one token may create. Rates are a few per hour, so
/// that no test depends on how fast it runs (a refill takes many minutes).
@Suite("replayd: limits per client", .timeLimit(.minutes(5)))
struct LimitsTests {
    static func count(_ daemon: TestDaemon, _ sql: String) async throws -> String {
        try await Prerequisite.sqlite3.require()
        return try await runProgram("/usr/bin/sqlite3", [daemon.databasePath, sql]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aTokenOverItsRequestRateGets429WhileAnotherIsServed() async throws {
        try await withTemporaryDirectory { directory in
            let keys = try TokenTests.keyFile(in: directory)
            try await withHTTP(arguments: ["--auth-keys", keys, "--rate-limit-requests", "3/h"]) { daemon, http in
                // The operator's token carries its own, higher limit (the `limits` claim).
                let admin = try await TokenTests.mint(
                    keys, subject: "ops", scopes: ["**=read,write,admin"], extra: ["--limit-requests", "1000/s"])
                let alice = try await TokenTests.mint(keys, subject: "alice", scopes: ["tenant-a/**=read,write"])
                let bob = try await TokenTests.mint(keys, subject: "bob", scopes: ["tenant-a/**=read,write"])
                let text = [("Content-Type", "text/plain")]
                #expect(try await http.request("PUT", "/v1/stream/tenant-a/x", headers: TokenTests.bearer(admin) + text).status == 201)

                for n in 1...3 {
                    let posted = try await http.request("POST", "/v1/stream/tenant-a/x", headers: TokenTests.bearer(alice) + text, body: "a\(n)")
                    #expect(posted.status == 204)
                }
                let over = try await http.request("POST", "/v1/stream/tenant-a/x", headers: TokenTests.bearer(alice) + text, body: "a4")
                #expect(over.status == 429)
                let retry = Int(over["Retry-After"] ?? "") ?? 0
                #expect((1...1200).contains(retry), "a request's refill at 3/h is 20 min: \(over["Retry-After"] ?? "none")")
                let message = (try JSONSerialization.jsonObject(with: over.body) as? [String: [String: String]])?["error"]?["message"] ?? ""
                #expect(message.hasPrefix("token 'alice' is over its rate (3/h requests); retry in"), "\(over.text)")
                #expect(try await http.request("GET", "/v1/stream/tenant-a/x?offset=-1", headers: TokenTests.bearer(alice)).status == 429)

                // Another token is served meanwhile, and the refused POST stored nothing.
                let read = try await http.request("GET", "/v1/stream/tenant-a/x?offset=-1", headers: TokenTests.bearer(bob))
                #expect(read.status == 200)
                #expect(read.text == "a1a2a3")
                #expect(try await Self.count(daemon, "SELECT last_seq FROM streams WHERE name = 'tenant-a/x'") == "3")

                let metrics = try await http.request("GET", "/metrics", headers: TokenTests.bearer(admin))
                #expect(
                    metrics.text.contains(#"replay_rate_limited_total{door="http"} 2"#), "\(metrics.text.split(separator: "\n").filter { $0.contains("rate") })"
                )
                // Logged once for the run of refusals, by who, never with the token.
                #expect(daemon.log.components(separatedBy: "rate limited: token 'alice'").count == 2, "\(daemon.log)")
                #expect(!daemon.log.contains(alice))
            }
        }
    }

    @Test func aBodyOfUnknownLengthIsChargedAsItArrives() async throws {
        try await withHTTP(arguments: ["--rate-limit-bytes", "1000/h"]) { daemon, http in
            let text = [("Content-Type", "text/plain")]
            #expect(try await http.request("PUT", "/v1/stream/bulk", headers: text).status == 201)
            // No Content-Length: admitted, its 1,500 bytes counted as read, leaving a debt...
            let chunked = try await http.request("POST", "/v1/stream/bulk", headers: text, chunks: [Data(count: 700), Data(count: 800)])
            #expect(chunked.status == 204)
            // ...so that the next write from this address waits until it is paid off.
            let next = try await http.request("POST", "/v1/stream/bulk", headers: text, body: "x")
            #expect(next.status == 429)
            #expect(Int(next["Retry-After"] ?? "") ?? 0 > 60, "500 bytes of debt at 1000/h: about 30 min: \(next["Retry-After"] ?? "none")")
            #expect(next.text.contains("address 127.0.0.1"), "\(next.text)")
            #expect(try await Self.count(daemon, "SELECT last_seq FROM streams WHERE name = 'bulk'") == "1")
        }
    }

    @Test func aSocketConnectionOverItsRateGetsRateLimitedWhileAnotherIsServed() async throws {
        try await withDaemon(arguments: ["--rate-limit-requests", "3/h", "--rate-limit-bytes", "1k/h"]) { daemon in
            try await withWireClient(daemon.socketPath) { first in
                var buffer = ByteBuffer()
                for n in 1...5 { ClientCommand.publish(stream: "jobs", payload: ByteBuffer(string: "j\(n)")).write(into: &buffer) }
                try await first.send(buffer)
                let frames = try await first.frames(5)
                #expect(frames.prefix(3) == [.published(sequence: 1), .published(sequence: 2), .published(sequence: 3)])
                for frame in frames.suffix(2) {
                    guard case .error(let error) = frame else {
                        Issue.record("expected rate_limited, got \(frame)")
                        continue
                    }
                    #expect(error.code == .rateLimited)
                    #expect(error.message.contains("retry_after="), "\(error.message)")
                }
                // The connection stays open, and PING is not counted.
                try await first.send(.ping)
                #expect(try await first.expectFrame() == .pong)

                try await withWireClient(daemon.socketPath) { second in
                    // Another connection: its own requests, and its own bytes.
                    #expect(try await second.publish("jobs", [String(repeating: "b", count: 900)]) == [4])
                    try await second.send(.publish(stream: "jobs", payload: ByteBuffer(string: String(repeating: "c", count: 200))))
                    guard case .error(let error) = try await second.expectFrame() else { throw TestFailure("expected rate_limited") }
                    #expect(error.code == .rateLimited)
                }
            }
            #expect(try await Self.count(daemon, "SELECT count(*) FROM events WHERE stream = 'jobs'") == "4")
        }
    }

    @Test func aTokenCreatesAtMostItsCapOfStreams() async throws {
        try await withTemporaryDirectory { directory in
            let keys = try TokenTests.keyFile(in: directory)
            try await withHTTP(arguments: ["--auth-keys", keys, "--token-max-streams", "2"]) { daemon, http in
                let alice = try await TokenTests.mint(keys, subject: "alice", scopes: ["tenant-a/**=read,write,admin"])
                let carol = try await TokenTests.mint(keys, subject: "carol", scopes: ["tenant-c/**=admin"], extra: ["--limit-streams", "3"])
                func put(_ token: String, _ stream: String) async throws -> HTTPTestClient.Response {
                    try await http.request("PUT", "/v1/stream/" + stream, headers: TokenTests.bearer(token))
                }
                #expect(try await put(alice, "tenant-a/one").status == 201)
                #expect(try await put(alice, "tenant-a/two").status == 201)
                let third = try await put(alice, "tenant-a/three")
                #expect(third.status == 403)
                #expect(third.text.contains("'alice' has created 2 streams, as many as it may"), "\(third.text)")
                // Declaring one it has again is not a creation.
                #expect(try await put(alice, "tenant-a/one").status == 200)
                // Deleting one makes room.
                #expect(try await http.request("DELETE", "/v1/stream/tenant-a/one", headers: TokenTests.bearer(alice)).status == 204)
                #expect(try await put(alice, "tenant-a/three").status == 201)
                // A token's own claim overrides the daemon's cap.
                for n in 1...3 { #expect(try await put(carol, "tenant-c/s\(n)").status == 201) }
                #expect(try await put(carol, "tenant-c/s4").status == 403)

                // Who made what is in the row, for sqlite3 (and the count survives restarts).
                #expect(
                    try await Self.count(daemon, "SELECT created_by, count(*) FROM streams GROUP BY created_by ORDER BY created_by")
                        == "alice|2\ncarol|3")
                #expect(daemon.log.contains("http: denied 403: alice asked to create 'tenant-a/three'"))
            }
        }
    }
}
