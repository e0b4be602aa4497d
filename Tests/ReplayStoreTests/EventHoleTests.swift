import Foundation
import ReplayModel
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// Events removed from inside a stream's window (`EventHole`), as expiry removes them, on
/// both stores: reads end before a hole and go on after it,
/// the chain is checked across it, the count leaves it out, retention passes it, and a
/// key whose newest event went falls back to the one before.
@Suite("Holes inside a stream")
struct EventHoleTests {
    @Test(arguments: StoreKind.allCases) func aReadEndsBeforeAHoleAndTheChainIsCheckedAcrossIt(_ kind: StoreKind) async throws {
        try await withEvents(1...10, kind) { store in
            let info = try await store.removeEvents("s", from: 4, through: 6)
            #expect(info.eventCount == 7)
            #expect(info.byteCount == 2 * 6 + 3, "e1 e2 e3 e7 e8 e9 e10")
            #expect(info.firstSequence == 1 && info.lastSequence == 10)
            #expect(try store.read("s", from: 1).map(\.sequence) == [1, 2, 3], "a read ends at the hole: its reader reports the gap")
            #expect(try store.read("s", from: 4).map(\.sequence) == [7, 8, 9, 10], "the event after the hole is checked from the hole's hash")
            #expect(try store.read("s", from: 5, through: 6).isEmpty)

            // Beside the hole on both sides: one hole, 3...7.
            _ = try await store.removeEvents("s", from: 3, through: 3)
            let merged = try await store.removeEvents("s", from: 7, through: 7)
            #expect(merged.eventCount == 5)
            #expect(try await scalar(store, "SELECT count(*) FROM event_holes") == 1)
            #expect(try await scalar(store, "SELECT from_seq FROM event_holes WHERE through_seq = 7") == 3)
            #expect(try store.read("s", from: 3).map(\.sequence) == [8, 9, 10])

            let report = try store.verify("s")
            #expect(report.isIntact)
            #expect(report.events == 5)
            // In ranges, one starting inside the hole: each from what is stored before it.
            let ranges = try store.verify("s", parts: 3, eventsPerPart: 1)
            #expect(ranges.isIntact)
            #expect(ranges.events == 5)
            #expect(ranges.lastHash == report.lastHash)
        }
    }

    @Test(arguments: StoreKind.allCases) func aRowRemovedWithoutItsHoleStillBreaksTheChain(_ kind: StoreKind) async throws {
        try await withEvents(1...6, kind) { store in
            _ = try await store.removeEvents("s", from: 2, through: 2)
            // By hand, as an attacker would: event 4 goes, and no hole says why.
            switch kind {
            case .sqlite: try await shell("sqlite3 '\(store.location)' 'DELETE FROM event_log WHERE key = (1 << 40) | 4'")
            case .postgres: try await TestPostgres.psql(store.location, "DELETE FROM event_log WHERE seq = 4")
            }
            let report = try store.verify("s")
            #expect(report.broken?.sequence == 5, "event 5 follows no stored link")
            #expect(throws: StoreError.self) { try store.read("s", from: 4) }
        }
    }

    @Test(arguments: StoreKind.allCases) func aHoleAtTheEndIsNotMissingAndTheNextEventFollowsIt(_ kind: StoreKind) async throws {
        try await withEvents(1...5, kind) { store in
            _ = try await store.removeEvents("s", from: 4, through: 5)
            #expect(try store.verify("s").isIntact, "the last two were removed, not lost")
            _ = try await store.append(Data("e6".utf8), to: "s")
            #expect(try store.read("s", from: 4).map(\.sequence) == [6])
            let report = try store.verify("s")
            #expect(report.isIntact)
            #expect(report.events == 4)
        }
    }

    @Test(arguments: StoreKind.allCases) func retentionCountsTheEventsThereAndPassesAHoleWhole(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.create("capped", config: StreamConfig(capacity: 6))
            for index in 1...6 { _ = try await store.append(Data("e\(index)".utf8), to: "capped") }
            _ = try await store.removeEvents("capped", from: 2, through: 3)
            // Four kept: two more fit under the capacity of six.
            for index in 7...8 { _ = try await store.append(Data("e\(index)".utf8), to: "capped") }
            #expect(store.info("capped")?.firstSequence == 1)
            // The seventh event: the oldest goes, and the window does not start in the hole.
            _ = try await store.append(Data("e9".utf8), to: "capped")
            let info = try #require(store.info("capped"))
            #expect(info.firstSequence == 4)
            #expect(info.eventCount == 6)
            #expect(info.removedEvents == 0)
            #expect(try await scalar(store, "SELECT count(*) FROM event_holes") == 0)
            #expect(try store.read("capped", from: 1).map(\.sequence) == [4, 5, 6, 7, 8, 9])
            #expect(try store.verify("capped").isIntact, "the chain's base is the hole's last link")

            // Removed from the front: retention's way, no hole.
            let front = try await store.removeEvents("capped", from: 1, through: 5)
            #expect(front.firstSequence == 6)
            #expect(front.removedEvents == 0)
            #expect(try store.verify("capped").isIntact)
        }
    }

    @Test(arguments: StoreKind.allCases) func aKeyWhoseNewestEventWentFallsBackToTheOneBefore(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.create("kv", config: .unlimited)
            for (payload, key) in [("a1", "a"), ("b2", "b"), ("x3", "x"), ("a4", "a"), ("b5", "b")] {
                var write = StreamWrite(stream: "kv", payloads: [Data(payload.utf8)])
                write.key = EventKey(key)
                _ = try await store.write(write)
            }
            _ = try await store.removeEvents("kv", from: 4, through: 4)
            _ = try await store.removeEvents("kv", from: 2, through: 2)
            func value(_ key: String) throws -> String? {
                try store.latest("kv", key: EventKey(key)!).map { String(decoding: $0.payload, as: UTF8.self) }
            }
            #expect(try value("a") == "a1")
            #expect(try value("b") == "b5")
            _ = try await store.removeEvents("kv", from: 5, through: 5)
            #expect(try value("b") == nil, "b's events are all gone")
            #expect(try store.currentEvents(of: "kv", through: .max) == [1, 3])
        }
    }

    @Test(arguments: StoreKind.allCases) func aTimeStartFindsTheEventAfterAHole(_ kind: StoreKind) async throws {
        let now = Locked(Date(timeIntervalSince1970: 1_000))
        try await withStoreLocation(kind) { location in
            let store = try openStore(location, clock: { now.value })
            defer { store.close() }
            _ = try await store.create("s", config: .unlimited)
            for index in 1...8 {
                _ = try await store.append(Data("e\(index)".utf8), to: "s")
                now.withLock { $0 += 1 }
            }
            _ = try await store.removeEvents("s", from: 3, through: 6)
            // Event 4 was committed at 1,003 s: the first kept at or after it is 7.
            #expect(try store.firstSequence("s", since: Date(timeIntervalSince1970: 1_003)) == 7)
            #expect(try store.firstSequence("s", since: Date(timeIntervalSince1970: 1_001)) == 2)
        }
    }

    /// A store of `kind` with a stream "s" of events `e1`, `e2`, … numbered `sequences`.
    private func withEvents(_ sequences: ClosedRange<Int>, _ kind: StoreKind, _ body: (EventStore) async throws -> Void) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.create("s", config: .unlimited)
            for index in sequences { _ = try await store.append(Data("e\(index)".utf8), to: "s") }
            try await body(store)
        }
    }
}
