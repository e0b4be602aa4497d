import Foundation
import NIOCore
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// `SUB <stream> <sid> snapshot`: the current event of every key, then live, with no gap
/// and no duplicate between the two while writers keep writing; on both stores.
@Suite("replayd: snapshot, then tail", .timeLimit(.minutes(5)))
struct SnapshotStartTests {
    /// Keyed events, their tombstones and unkeyed ones: the snapshot is each key's newest
    /// event unless it is a tombstone, in sequence order, and the live events follow.
    @Test func aSnapshotIsEachKeysCurrentEventThenLive() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(
                    "PUB p key=a 2\r\na1\r\nPUB p key=b 2\r\nb1\r\nPUB p 5\r\nplain\r\nPUB p key=a 2\r\na2\r\n"
                        + "PUB p key=c 2\r\nc1\r\nPUB p key=b 0\r\n\r\n")
                _ = try await client.frames(6)
                try await client.send("SUB p s snapshot\r\n")
                #expect(try await client.expectFrame() == .ok)
                #expect(try await client.frames(2).keyedEvents == [KeyedEvent(4, "a2", "a"), KeyedEvent(5, "c1", "c")])
                try await client.send("PUB p key=b 2\r\nb2\r\n")
                let live = try await client.frames(2)
                #expect(live.keyedEvents == [KeyedEvent(7, "b2", "b")], "then live, keyed or not")
            }
        }
    }

    /// The switch from the snapshot to live is exact while a writer keeps publishing: every
    /// event after the snapshot's point arrives once, and before it exactly the current
    /// event of each key as of that point.
    @Test(arguments: [false, true]) func noGapAndNoDuplicateWhileWritersWrite(onPostgreSQL: Bool) async throws {
        try await withStoreDaemon(onPostgreSQL: onPostgreSQL) { daemon in
            let writer = try await ReplayClient.connect(to: daemon.socketPath)
            let keys = (0..<50).map { EventKey("k\($0)")! }
            // Event n: key n % 50, a tombstone every seventh event.
            func batch(_ range: Range<Int>) -> (payloads: [Data], checks: [AppendConditions]) {
                let payloads = range.map { $0 % 7 == 6 ? Data() : Data("v\($0)".utf8) }
                return (payloads, range.map { AppendConditions(key: keys[$0 % keys.count]) })
            }
            let first = batch(0..<2000)
            _ = try await writer.startPublishing("prices", contentsOf: first.payloads, checks: first.checks).results
            let publishing = Task {
                for start in stride(from: 2000, to: 8000, by: 500) {
                    let next = batch(start..<start + 500)
                    _ = try await writer.startPublishing("prices", contentsOf: next.payloads, checks: next.checks).results
                }
                _ = try await writer.publish("prices", "end")
            }
            let received = try await withWireClient(daemon.socketPath) { reader in
                try await reader.send("SUB prices r snapshot\r\n")
                #expect(try await reader.expectFrame() == .ok)
                var events: [KeyedEvent] = []
                while events.last?.payload != "end" { events += [try await reader.expectFrame()].keyedEvents }
                return events
            }
            try await publishing.value
            await writer.close()

            // The truth: event n (sequence n + 1) as published.
            func key(_ sequence: UInt64) -> String { keys[Int(sequence - 1) % keys.count].text }
            func payload(_ sequence: UInt64) -> String { Int(sequence - 1) % 7 == 6 ? "" : "v\(sequence - 1)" }
            let sequences = received.map(\.sequence)
            #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count, "in order, each once")
            let last = try #require(sequences.last)
            #expect(last == 8001)
            // The point the snapshot was taken at (its SUB's last sequence number, after the
            // first batch) is not seen by the client, and a snapshot may end in a run of
            // contiguous events: some point must explain what arrived. Everything after it
            // arrived, and before it exactly each key's current event as of it.
            var lowest = last
            while lowest > 0, sequences.contains(lowest) { lowest -= 1 }
            var current: [String: UInt64] = [:]
            for sequence in 1...max(lowest, 2000) { current[key(sequence)] = sequence }
            var explained = false
            for point in max(lowest, 2000)...(last - 1) {
                if point > max(lowest, 2000) { current[key(point)] = point }
                let expected = current.values.filter { !payload($0).isEmpty }.sorted().map { KeyedEvent($0, payload($0), key($0)) }
                if received.prefix(while: { $0.sequence <= point }) == expected[...] {
                    explained = true
                    break
                }
            }
            #expect(explained, "no point explains \(received.prefix(60))")
        }
    }

    @Test func aSnapshotStartIsForAPlainSubscriptionOfOneStream() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                for refused in ["SUB p s snapshot durable=d", "SUB p s snapshot group=g", "SUB p/* s snapshot"] {
                    try await client.send(refused + "\r\n")
                    guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("\(refused) was accepted") }
                    #expect(error.code == .badCommand && error.message.contains("snapshot"), "\(error)")
                }
                // A window bounds the snapshot as it bounds any page.
                try await client.send("PUB w key=a 1\r\n1\r\nPUB w key=b 1\r\n2\r\nPUB w key=c 1\r\n3\r\nSUB w s snapshot window=2\r\n")
                _ = try await client.frames(3)
                #expect(try await client.expectFrame() == .ok)
                #expect(try await client.frames(2).keyedEvents == [KeyedEvent(1, "1", "a"), KeyedEvent(2, "2", "b")])
                try await client.send(.more(sid: "s", count: 1))
                let rest = try await client.frames(2)
                #expect(rest.contains(.ok) && rest.keyedEvents == [KeyedEvent(3, "3", "c")])
            }
        }
    }

    /// A daemon on a SQLite file in a temp folder, or on a fresh PostgreSQL database.
    private func withStoreDaemon(onPostgreSQL: Bool, _ body: (TestDaemon) async throws -> Void) async throws {
        guard onPostgreSQL else { return try await withDaemon(body) }
        try await TestPostgres.withDatabase { url in try await withDaemon(database: url, body) }
    }
}
