import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// Per-event expiry against the real daemon: an event published with `ttl=` (or under a
/// stream's `event_ttl`) is not served once it expires, a reader that asked for it is told
/// of a gap, and the retention pass removes its row, on the socket and over HTTP.
@Suite("replayd: event expiry", .timeLimit(.minutes(4)))
struct EventTTLTests {
    @Test func anExpiredEventIsAGapToItsReaderAndRetentionRemovesIt() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory)
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(
                    "PUB s 2\r\nk1\r\nPUB s ttl=0.5 2\r\ne2\r\nPUB s 2\r\nk3\r\nCREATE d capacity=unlimited event_ttl=0.5\r\nPUB d 2\r\nd1\r\n")
                #expect(
                    try await client.frames(5) == [.published(sequence: 1), .published(sequence: 2), .published(sequence: 3), .ok, .published(sequence: 1)])
            }
            // Once e2 expired, a reader from the start is told of its gap between the others.
            try await eventually(within: 60, "the event expired") {
                try await withWireClient(daemon.socketPath) { client in
                    try await client.send(.subscribe(stream: "s", sid: "all", start: .all))
                    let frames = try await client.frames(4)
                    guard case .gap(_, _, 2, 2) = frames[2] else { return false }
                    return frames[0] == .ok && frames[1].eventSequence == 1 && frames[3].eventSequence == 3
                }
            }
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await eventually(within: 60, "the retention pass removed both") {
                let (s, d) = (try await client.info("s"), try await client.info("d"))
                return s.count == 2 && d.count == 0
            }
            let defaulted = try await client.info("d")
            #expect(defaulted.eventTTL == 0.5)
            #expect(defaulted.firstSeq == 2, "the stream's default expired its oldest: no hole")
            await client.close()
            #expect(await daemon.stop() == 0)
            let database = directory + "/replay.sqlite"
            #expect(try await DerivedStreamTests.sql(database, "SELECT group_concat(seq) FROM events WHERE stream = 's'") == "1,3")
            #expect(try await DerivedStreamTests.sql(database, "SELECT from_seq || '-' || through_seq FROM event_holes") == "2-2")
        }
    }

    @Test func aPOSTsEventsExpireWithReplayTTLAndAPUTSetsTheStreamsDefault() async throws {
        try await withHTTP { _, http in
            let text = [("Content-Type", "text/plain")]
            #expect(try await http.request("PUT", "/v1/stream/h", headers: text + [("Replay-Event-TTL", "3600")]).status == 201)
            #expect(try await http.request("HEAD", "/v1/stream/h")["Replay-Event-TTL"] == "3600")
            #expect(try await http.request("POST", "/v1/stream/h", headers: text, body: "a").status == 204)
            #expect(try await http.request("POST", "/v1/stream/h", headers: text + [("Replay-TTL", "0.5")], body: "b").status == 204)
            #expect(try await http.request("POST", "/v1/stream/h", headers: text, body: "c").status == 204)
            let refused = try await http.request("POST", "/v1/stream/h", headers: text + [("Replay-TTL", "-1")], body: "d")
            #expect(refused.status == 400, "\(refused.text)")
            // An HTTP reader passes over the hole: the offsets after it are where they were.
            try await eventually(within: 60, "b expired") { try await http.request("GET", "/v1/stream/h?offset=-1").text == "ac" }
            let sse = try await http.stream("/v1/stream/h?offset=-1&live=sse") { $0.contains("upToDate") }
            #expect(sse.text.contains("data:ac\n"), "\(sse.text)")
        }
    }
}

extension ServerFrame {
    /// An event frame's sequence number; `nil` for any other frame.
    fileprivate var eventSequence: UInt64? {
        if case .event(_, _, let sequence, _, _, _, _, _) = self { return sequence }
        return nil
    }
}
