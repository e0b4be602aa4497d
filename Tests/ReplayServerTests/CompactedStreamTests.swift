import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// Key compaction against the real daemon: a stream created with `compact=yes` keeps each
/// key's newest event (its compaction service removes the rest a pass at a time), a
/// tombstone removes its key and then goes itself, compaction waits for a durable consumer,
/// and HTTP creates and describes a compacted stream.
@Suite("replayd: key compaction", .timeLimit(.minutes(4)))
struct CompactedStreamTests {
    @Test func aCompactedStreamKeepsEachKeysNewestAndATombstoneRemovesItsKey() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory)
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(
                    "CREATE c capacity=unlimited compact=yes tombstone_retention=0.5\r\n"
                        + "PUB c key=a 2\r\na1\r\nPUB c key=b 2\r\nb1\r\nPUB c 5\r\nnokey\r\nPUB c key=a 2\r\na2\r\nPUB c key=b 0\r\n\r\n")
                #expect(try await client.frames(6) == [.ok] + (1...5).map { .published(sequence: $0) })
            }
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            // a1 and b1 are superseded; b's tombstone goes once it is half a second old.
            try await eventually(within: 60, "compaction removed a1, b1 and b's tombstone, and a pass ended") {
                let info = try await client.info("c")
                return info.count == 2 && info.compaction?.lastRun != nil
            }
            let info = try await client.info("c")
            #expect(info.compaction?.removed == 3)
            #expect(info.compaction?.tombstoneRetention == 0.5)
            #expect(info.compaction?.lastRun != nil)
            #expect(info.keys == 1)
            #expect(try await client.latest("c", key: EventKey("a")!)?.text == "a2")
            #expect(try await client.latest("c", key: EventKey("b")!) == nil, "b was deleted, and its tombstone is gone too")
            await client.close()
            try await withWireClient(daemon.socketPath) { reader in
                try await reader.send(.subscribe(stream: "c", sid: "all", start: .all))
                let frames = try await reader.frames(4)
                #expect(frames[0] == .ok)
                #expect(frames.keyedEvents == [KeyedEvent(3, "nokey", nil), KeyedEvent(4, "a2", "a")], "\(frames)")
                #expect(frames.last == .gap(stream: "c", sid: "all", from: 5, through: 5), "the tombstone's hole, at the end")
            }
            #expect(await daemon.stop() == 0)
            let database = directory + "/replay.sqlite"
            #expect(try await DerivedStreamTests.sql(database, "SELECT group_concat(seq) FROM events WHERE stream = 'c'") == "3,4")
            #expect(try await DerivedStreamTests.sql(database, "SELECT compact, tombstone_retention_seconds, compacted_events FROM streams") == "1|0.5|3")
        }
    }

    @Test func compactionWaitsForADurableConsumer() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("CREATE held compact=yes\r\nCREATE witness compact=yes\r\n")
                #expect(try await client.frames(2) == [.ok, .ok])
                try await client.send(.subscribeDurable(stream: "held", sid: "d", start: .all, consumer: "audit"))
                #expect(try await client.expectFrame() == .ok)
                try await withWireClient(daemon.socketPath) { publisher in
                    for stream in ["held", "witness"] {
                        try await publisher.send("PUB \(stream) key=a 2\r\na1\r\nPUB \(stream) key=a 2\r\na2\r\nPUB \(stream) key=a 2\r\na3\r\n")
                        _ = try await publisher.frames(3)
                    }
                    let info = try await ReplayClient.connect(to: daemon.socketPath)
                    defer { Task { await info.close() } }
                    // Two passes of the witness after the publishes: the held stream had its
                    // turn between them, and kept what its consumer has not acknowledged.
                    try await eventually(within: 60, "the witness compacted") { try await info.info("witness").count == 1 }
                    try await publisher.send("PUB witness key=a 2\r\na4\r\n")
                    _ = try await publisher.expectFrame()
                    try await eventually(within: 60, "the witness compacted again") { try await info.info("witness").compaction?.removed == 3 }
                    #expect(try await info.info("held").count == 3)
                    #expect(try await info.info("held").compaction?.removed == 0)

                    // Acknowledged up to 2: a1 and a2 may go, a3 is a's newest.
                    _ = try await client.frames(3)
                    try await client.send(.ack(sid: "d", sequence: 2))
                    try await eventually(within: 60, "compaction went up to the acknowledgement") { try await info.info("held").count == 1 }
                    #expect(try await info.info("held").firstSeq == 3)
                }
            }
        }
    }

    @Test func aPUTCreatesACompactedStreamAndHEADSaysSo() async throws {
        try await withHTTP { _, http in
            let text = [("Content-Type", "text/plain")]
            let compact = [("Replay-Compact", "true"), ("Replay-Tombstone-Retention", "3600")]
            #expect(try await http.request("PUT", "/v1/stream/h", headers: text + compact).status == 201)
            let head = try await http.request("HEAD", "/v1/stream/h")
            #expect(head["Replay-Compact"] == "true")
            #expect(head["Replay-Tombstone-Retention"] == "3600.0")
            for value in ["v1", "v2"] {
                #expect(try await http.request("POST", "/v1/stream/h", headers: text + [("Replay-Key", "k")], body: value).status == 204)
            }
            try await eventually(within: 60, "v1 compacted away") { try await http.request("GET", "/v1/stream/h?offset=-1").text == "v2" }
            for bad in [
                [("Replay-Compact", "maybe")], [("Replay-Tombstone-Retention", "60")], [("Replay-Compact", "true"), ("Replay-Tombstone-Retention", "-1")],
            ] {
                let refused = try await http.request("PUT", "/v1/stream/bad", headers: text + bad)
                #expect(refused.status == 400, "\(bad): \(refused.text)")
            }
        }
    }
}
