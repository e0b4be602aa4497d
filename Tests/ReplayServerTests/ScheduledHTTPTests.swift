import Foundation
import ReplayClient
import ReplayTesting
import Testing

/// A scheduled POST on the real daemon's HTTP door: `Replay-Delay` or `Replay-At` stores
/// the event at once (`202 Accepted`, with its id and due time) and appends it when it
/// falls due; the socket lists and cancels it as any scheduled event.
@Suite("Scheduled events over HTTP", .timeLimit(.minutes(3)))
struct ScheduledHTTPTests {
    static let json = [("Content-Type", "application/json")]

    @Test func aScheduledPostIsAcceptedAtOnceAndAppendedWhenItFallsDue() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0"])
            defer { Task { await daemon.stop() } }
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            #expect(try await http.request("PUT", "/v1/stream/jobs", headers: Self.json).status == 201)

            let later = try await http.request("POST", "/v1/stream/jobs", headers: Self.json + [("Replay-Delay", "600")], body: #"{"job":"later"}"#)
            #expect(later.status == 202, "\(later.text)")
            let id = try #require(later.headers["Replay-Scheduled-Id"].first.flatMap { Int64($0) })
            #expect(later.headers["Replay-Due"].first?.hasSuffix("Z") == true && later.text.contains(#""id":\#(id)"#))
            #expect(try await http.request("GET", "/v1/stream/jobs?offset=-1").text == "[]", "stored, not appended")

            let soon = try await http.request(
                "POST", "/v1/stream/jobs", headers: Self.json + [("Replay-At", "2026-01-01T00:00:00Z"), ("Replay-Key", "j1")], body: #"{"job":"now"}"#)
            #expect(soon.status == 202)
            try await eventually("the past-due event appended") {
                try await http.request("GET", "/v1/stream/jobs?offset=-1").text == #"[{"job":"now"}]"#
            }
            #expect(try await http.request("GET", "/v1/stream/jobs?key=j1").text == #"{"job":"now"}"#, "its key came with it")
            let metrics = try await http.request("GET", "/metrics").text
            #expect(metrics.contains("replay_scheduled_appended_total 1") && metrics.contains("replay_scheduled_dropped_total 0"))

            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let pending = try await client.scheduled("jobs")
            #expect(pending.map(\.id) == [id] && pending.first?.text == #"{"job":"later"}"#)
            #expect(try await client.info("jobs").scheduled == 1)
            try await client.unschedule("jobs", id: id)
            #expect(try await client.scheduled("jobs").isEmpty)
            await client.close()

            for (headers, body, status) in [
                ([("Replay-Delay", "5"), ("Replay-At", "2026-12-01T09:00:00Z")], "1", 400),
                ([("Replay-Delay", "soon")], "1", 400),
                ([("Replay-Delay", "5"), ("Producer-Id", "p"), ("Producer-Epoch", "0"), ("Producer-Seq", "0")], "1", 400),
                ([("Replay-Delay", "5")], "[1,2]", 400),
                ([("Replay-Delay", "5")], "", 400),
            ] {
                let refused = try await http.request("POST", "/v1/stream/jobs", headers: Self.json + headers, body: body)
                #expect(refused.status == status, "\(headers) \(body): \(refused.text)")
            }
            #expect(try await http.request("POST", "/v1/stream/none", headers: Self.json + [("Replay-Delay", "5")], body: "1").status == 404)
            #expect(try await http.request("POST", "/v1/stream/jobs", headers: Self.json + [("Stream-Closed", "true")]).status == 204)
            #expect(try await http.request("POST", "/v1/stream/jobs", headers: Self.json + [("Replay-Delay", "5")], body: "1").status == 409)
        }
    }
}
