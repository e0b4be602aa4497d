import Foundation
import GRDB
import ReplayTesting
import Testing

@testable import ReplayStore

/// A SQLite group's first deliveries still held are runs in its row, not a row each; the
/// rest of its pending events are rows. Both read back as the same pending set.
@Suite("Held first deliveries as runs")
struct HeldRunsTests {
    static let ackWait: Int64 = 30_000

    static func held(_ member: String, at time: Int64) -> PendingDelivery {
        PendingDelivery(member: member, lastMember: member, deliveries: 1, due: time + ackWait, firstDelivered: time, lastDelivered: time)
    }

    @Test func runsRoundTripAndLeaveOutWhatIsNotAHeldFirstDelivery() {
        var pending: [UInt64: PendingDelivery] = [:]
        for sequence in UInt64(1)...64 { pending[sequence] = Self.held("a", at: 1_000) }
        for sequence in UInt64(65)...80 where sequence != 70 { pending[sequence] = Self.held("bé", at: 900) }
        pending[1_000_000] = Self.held("a", at: 5_000)
        // Given back, delivered again, freed: rows, not runs.
        pending[90] = PendingDelivery(member: nil, lastMember: "a", deliveries: 1, due: 2_000, firstDelivered: 1_000, lastDelivered: 1_000)
        pending[91] = PendingDelivery(member: "a", lastMember: "a", deliveries: 2, due: 40_000, firstDelivered: 1_000, lastDelivered: 10_000)
        let bytes = HeldRuns.encode(pending, ackWait: Self.ackWait)
        let decoded = HeldRuns.decode(bytes, ackWait: Self.ackWait)
        #expect(decoded == pending.filter { $0.key < 90 || $0.key == 1_000_000 })
        #expect(bytes.count < 40, "four runs and two names, not a row per event: \(bytes.count) bytes")
        #expect(HeldRuns.decode(HeldRuns.encode([:], ackWait: Self.ackWait), ackWait: Self.ackWait) == [:])
    }

    @Test func manyMembersRoundTrip() {
        var pending: [UInt64: PendingDelivery] = [:]
        for sequence in UInt64(1)...300 { pending[sequence] = Self.held("member-\(sequence % 20)", at: 1_000 + Int64(sequence % 3)) }
        #expect(HeldRuns.decode(HeldRuns.encode(pending, ackWait: Self.ackWait), ackWait: Self.ackWait) == pending)
    }

    @Test func damagedRunsAreRefused() {
        let bytes = HeldRuns.encode([7: Self.held("a", at: 1_000)], ackWait: Self.ackWait)
        #expect(HeldRuns.decode(Array(bytes.dropLast()), ackWait: Self.ackWait) == nil)
        #expect(HeldRuns.decode([5, 1], ackWait: Self.ackWait) == nil, "a name longer than the bytes")
        #expect(HeldRuns.decode([1, 1, 0x61, 3, 0, 0, 0], ackWait: Self.ackWait) == nil, "a member index out of range")
        #expect(HeldRuns.decode([1, 1, 0x61, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0], ackWait: Self.ackWait) == nil, "a run too long")
    }

    /// Events handed out, one acknowledged, one given back: after the store reopens, the
    /// group's pending set is the same, and only the given-back event has a row.
    @Test func aGroupsPendingSetSurvivesAReopenWithRowsOnlyForWhatIsNotHeld() async throws {
        try await withTemporaryDirectory { directory in
            let expected: [UInt64: PendingDelivery]
            do {
                let store = try openStore(directory)
                defer { store.close() }
                _ = try await store.create("jobs", config: .unlimited)
                _ = try await store.appendAll((1...6).map { "job \($0)" }, to: "jobs")
                let waiting = WaitingMembersTests()
                try await waiting.join(store, ackWaitMillis: 60_000)
                for member in ["a", "b"] {
                    let given = try await withCheckedContinuation { continuation in
                        store.group(
                            .handOut(group: "g", member: member, limit: 3, deadLetterConfig: .unlimited, wait: nil) {
                                continuation.resume(returning: $0)
                            }, of: "jobs")
                    }.get()
                    #expect(given.given.count == 3)
                }
                try await waiting.acknowledge(store, 2, by: "a")
                try await withCheckedContinuation { continuation in
                    store.group(
                        .giveBack(group: "g", member: "b", sequence: 5, delayMillis: 0, deadLetterConfig: .unlimited) {
                            continuation.resume(returning: $0)
                        }, of: "jobs")
                }.get()
                expected = try #require(store.groups(of: "jobs")?["g"]?.pending)
                #expect(expected.keys.sorted() == [1, 3, 4, 5, 6])
                let rows = try store.query { db in try Int64.fetchAll(db, sql: "SELECT seq FROM group_pending ORDER BY seq") }
                #expect(rows == [5], "the given-back event is a row; the held ones are runs")
            }
            let store = try openStore(directory)
            defer { store.close() }
            #expect(store.groups(of: "jobs")?["g"]?.pending == expected)
        }
    }

    /// A batch that changes a stream's groups only (a join, a hand-out, an ACK) leaves the
    /// stream's row alone; one that appends writes it. Counted by a trigger on the
    /// writer's own connection, where the batches run.
    @Test func groupChangesAloneDoNotRewriteTheStreamsRow() async throws {
        try await withTemporaryDirectory { directory in
            let store = try openStore(directory)
            defer { store.close() }
            _ = try await store.create("jobs", config: .unlimited)
            _ = try await store.appendAll(["job 1", "job 2"], to: "jobs")
            try store.queryWriter { db in
                try db.execute(
                    sql: """
                        CREATE TEMP TABLE row_writes (n INTEGER NOT NULL); INSERT INTO row_writes VALUES (0);
                        CREATE TEMP TRIGGER count_row_writes AFTER UPDATE ON main.streams
                        BEGIN UPDATE row_writes SET n = n + 1; END
                        """)
            }
            let rowWrites = { try store.queryWriter { db in try Int.fetchOne(db, sql: "SELECT n FROM temp.row_writes") ?? -1 } }
            let waiting = WaitingMembersTests()
            try await waiting.join(store, ackWaitMillis: 60_000)
            let given = try await withCheckedContinuation { continuation in
                store.group(
                    .handOut(group: "g", member: "a", limit: 2, deadLetterConfig: .unlimited, wait: nil) { continuation.resume(returning: $0) },
                    of: "jobs")
            }.get()
            #expect(given.given.map(\.sequence) == [1, 2])
            try await waiting.acknowledge(store, 1, by: "a")
            #expect(try rowWrites() == 0, "a join, a hand-out and an ACK leave the stream's row as it was")
            _ = try await store.append(Data("job 3".utf8), to: "jobs")
            #expect(try rowWrites() == 1)
            #expect(store.groups(of: "jobs")?["g"]?.pending.keys.sorted() == [2])
        }
    }

    /// A held first delivery written as a row before schema 0010 moves into the group's
    /// runs when the store opens, and is still pending, held by its member.
    @Test func aHeldRowFromBeforeTheRunsMovesIntoThemWhenTheStoreOpens() async throws {
        try await withTemporaryDirectory { directory in
            try await makeDatabase(
                in: directory, upTo: "0009_compact_producer_runs",
                """
                INSERT INTO streams (id, name, created_at, first_seq, last_seq, event_count, byte_count)
                VALUES (1, 'jobs', '2026-01-01T00:00:00.000Z', 1, 3, 3, 3);
                INSERT INTO groups (stream_id, name, ack_wait_ms, delivered_seq, delivered, redelivered, dead_lettered, created_at)
                VALUES (1, 'g', 30000, 2, 2, 0, 0, 1000);
                INSERT INTO group_pending (stream_id, name, seq, member, last_member, deliveries, due, first_delivered, last_delivered)
                VALUES (1, 'g', 1, 'a', 'a', 1, 31000, 1000, 1000), (1, 'g', 2, NULL, 'a', 1, 1500, 1000, 1000)
                """)
            let store = try openStore(directory)
            defer { store.close() }
            let pending = try #require(store.groups(of: "jobs")?["g"]?.pending)
            #expect(pending[1] == Self.held("a", at: 1_000))
            #expect(pending[2]?.member == nil && pending[2]?.due == 1_500)
            let rows = try store.query { db in try Int64.fetchAll(db, sql: "SELECT seq FROM group_pending ORDER BY seq") }
            #expect(rows == [2])
        }
    }
}
