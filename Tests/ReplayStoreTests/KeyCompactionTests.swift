import Foundation
import ReplayModel
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// Key compaction on both stores, on the store's clock: a pass removes the events a newer
/// one of their key superseded (from the front as retention does, else as holes), keeps
/// each key's newest and every event without a key, removes a tombstone once its retention
/// ran out, waits for a durable consumer, and goes in bounded batches that leave the chain
/// intact.
@Suite("Key compaction")
struct KeyCompactionTests {
    /// Appends `payloads` to `stream`, each with `key` if given (an empty payload is a
    /// tombstone).
    static func append(_ store: EventStore, _ payloads: [String], to stream: String, key: String? = nil) async throws {
        var write = StreamWrite(stream: stream, payloads: payloads.map { Data($0.utf8) })
        write.key = key.flatMap(EventKey.init)
        _ = try await store.write(write)
    }

    static func compacted(tombstoneRetention: Double = 60) -> StreamConfig {
        StreamConfig(capacity: nil, compaction: KeyCompaction(tombstoneRetention: tombstoneRetention))
    }

    static func value(_ store: EventStore, _ stream: String, _ key: String) throws -> String? {
        try store.latest(stream, key: EventKey(key)!).map { String(decoding: $0.payload, as: UTF8.self) }
    }

    @Test(arguments: StoreKind.allCases) func aPassKeepsEachKeysNewestAndEveryEventWithoutAKey(_ kind: StoreKind) async throws {
        try await EventExpiryTests.withClockedStore(kind) { store, _ in
            _ = try await store.create("kv", config: Self.compacted())
            for (payload, key) in [("a1", "a"), ("b2", "b"), ("x3", nil), ("a4", "a"), ("b5", "b"), ("c6", "c"), ("a7", "a")] as [(String, String?)] {
                try await Self.append(store, [payload], to: "kv", key: key)
            }
            let pass = try await store.compact("kv")
            #expect(pass == EventStore.CompactionPass(through: 7, removed: 3, tombstoneDue: nil))
            let info = try #require(store.info("kv"))
            #expect(info.firstSequence == 3, "1 and 2 went from the front, as retention removes")
            #expect(info.removedEvents == 1, "4 is a hole")
            #expect(info.eventCount == 4)
            #expect(info.compactedEvents == 3)
            #expect(info.compactedAt == Timestamp.millis(EventExpiryTests.start))
            #expect(info.config.compaction == KeyCompaction(tombstoneRetention: 60))
            #expect(try store.read("kv", from: 3).map(\.sequence) == [3], "a read ends before the hole")
            #expect(try store.read("kv", from: 5).map(\.sequence) == [5, 6, 7])
            #expect(try Self.value(store, "kv", "a") == "a7")
            #expect(try Self.value(store, "kv", "b") == "b5")
            #expect(try store.currentEvents(of: "kv", through: 7) == [5, 6, 7])
            #expect(try store.verify("kv").isIntact, "the chain is checked across what compaction removed")

            #expect(try await store.compact("kv").removed == 0, "a second pass finds nothing")
            try await Self.append(store, ["b8"], to: "kv", key: "b")
            #expect(try await store.compact("kv").removed == 1, "b5 is superseded now")
            #expect(try store.currentEvents(of: "kv", through: 8) == [6, 7, 8])
        }
    }

    @Test(arguments: StoreKind.allCases) func aTombstoneStaysForItsRetentionThenGoesWithItsKey(_ kind: StoreKind) async throws {
        try await EventExpiryTests.withClockedStore(kind) { store, now in
            _ = try await store.create("kv", config: Self.compacted(tombstoneRetention: 60))
            try await Self.append(store, ["a1"], to: "kv", key: "a")
            try await Self.append(store, ["b2"], to: "kv", key: "b")
            try await Self.append(store, [""], to: "kv", key: "a")
            let pass = try await store.compact("kv")
            #expect(pass.removed == 1, "a1, superseded by its tombstone")
            #expect(pass.tombstoneDue == Timestamp.millis(EventExpiryTests.start) + 60_000)
            #expect(try store.latest("kv", key: EventKey("a")!)?.payload.isEmpty == true, "the tombstone is a's newest, for readers behind")

            now.withLock { $0 += 59 }
            #expect(try await store.compact("kv").removed == 0, "not yet old enough")
            now.withLock { $0 += 1 }
            let later = try await store.compact("kv")
            #expect(later.removed == 1)
            #expect(later.tombstoneDue == nil)
            #expect(try store.latest("kv", key: EventKey("a")!) == nil, "the key is as if never published")
            #expect(try Self.value(store, "kv", "b") == "b2")
            #expect(store.info("kv")?.eventCount == 1)
            #expect(try store.keyCount(of: "kv", upTo: 10) == 1)
            if kind == .sqlite {
                #expect(try await scalar(store, "SELECT count(*) FROM event_keys WHERE event_key = 'a'") == 0)
            }
            #expect(try store.verify("kv").isIntact)
        }
    }

    @Test(arguments: StoreKind.allCases) func compactionWaitsForADurableConsumer(_ kind: StoreKind) async throws {
        try await EventExpiryTests.withClockedStore(kind) { store, _ in
            _ = try await store.create("kv", config: Self.compacted())
            let _: ConsumerStart = try await store.bridge { store.openConsumer("audit", of: "kv", initialNext: { _ in 1 }, completion: $0) }
            try await Self.append(store, ["a1", "a2", "a3"], to: "kv", key: "a")
            #expect(store.compactionEnd(of: "kv") == 0)
            let pass = try await store.compact("kv")
            #expect(pass.removed == 0, "the consumer has passed nothing")
            #expect(pass.through == 0)

            try await store.bridge { store.acknowledge(2, consumer: "audit", of: "kv", completion: $0) }
            #expect(store.compactionEnd(of: "kv") == 2)
            #expect(try await store.compact("kv").removed == 2)
            #expect(store.info("kv")?.firstSequence == 3)
        }
    }

    @Test(arguments: StoreKind.allCases) func aLongPassGoesInPagesAndStepsFromTheFrontAndAsHoles(_ kind: StoreKind) async throws {
        try await EventExpiryTests.withClockedStore(kind) { store, _ in
            _ = try await store.create("kv", config: Self.compacted())
            // a: 1...1000, b: 1001...2000, a: 2001...3000, b: 3001...4000, a: 4001...5000:
            // two pages of 4,096 events, each removed in steps of 1,024.
            for (index, key) in ["a", "b", "a", "b", "a"].enumerated() {
                try await Self.append(store, (1...1_000).map { "\(key)\(index * 1_000 + $0)" }, to: "kv", key: key)
            }
            let pass = try await store.compact("kv")
            #expect(pass.removed == 4_998)
            let info = try #require(store.info("kv"))
            #expect(info.firstSequence == 4_000, "b's newest")
            #expect(info.removedEvents == 999, "4001...4999: one hole, across pages and steps")
            #expect(info.eventCount == 2)
            #expect(info.compactedEvents == 4_998)
            #expect(try Self.value(store, "kv", "a") == "a5000")
            #expect(try Self.value(store, "kv", "b") == "b4000")
            #expect(try store.verify("kv").isIntact)
            #expect(try await scalar(store, "SELECT count(*) FROM event_holes") == 1)
        }
    }

    /// Rows of key `a` (newest 100) and without a key, as a page reads them.
    static func rows(_ keyed: [UInt64], unkeyed: [UInt64] = [], tombstones: [(UInt64, Int64)] = []) -> [CompactionRow] {
        (keyed.map { CompactionRow(sequence: $0, newest: 100, size: 2, millis: 0) }
            + unkeyed.map { CompactionRow(sequence: $0, newest: nil, size: 2, millis: 0) }
            + tombstones.map { CompactionRow(sequence: $0.0, newest: $0.0, size: 0, millis: $0.1) })
            .sorted { $0.sequence < $1.sequence }
    }

    @Test func aPlanSplitsWhatMayGoIntoStepsOfBoundedEventsAndRuns() {
        // 1...10 superseded, 11 without a key, 12...13 superseded, 15 too (14 is a hole).
        let plan = CompactionPlan(
            Self.rows(Array(1...10) + [12, 13, 15], unkeyed: [11]), now: 0, tombstoneRetention: 0, eventsPerStep: 4, runsPerStep: 2)
        #expect(plan.steps == [[1...4], [5...8], [9...10, 12...13], [15...15]])
        let runs = CompactionPlan(
            Self.rows([1, 3, 5, 7], unkeyed: [2, 4, 6]), now: 0, tombstoneRetention: 0, eventsPerStep: 100, runsPerStep: 2)
        #expect(runs.steps == [[1...1, 3...3], [5...5, 7...7]])
        let hole = CompactionPlan(Self.rows([1, 2, 6, 7]), now: 0, tombstoneRetention: 0, eventsPerStep: 100, runsPerStep: 2)
        #expect(hole.steps == [[1...7]], "a run spans the holes between its events")
    }

    @Test func aPlanKeepsEachKeysNewestAndATombstoneUntilItsRetentionRanOut() {
        let rows = [
            CompactionRow(sequence: 1, newest: 3, size: 2, millis: 0), CompactionRow(sequence: 2, newest: 2, size: 2, millis: 0),
            CompactionRow(sequence: 3, newest: 3, size: 0, millis: 1_000), CompactionRow(sequence: 4, newest: 4, size: 0, millis: 5_000),
        ]
        let plan = CompactionPlan(rows, now: 3_000, tombstoneRetention: 2_000, eventsPerStep: 100, runsPerStep: 100)
        #expect(plan.steps == [[1...1, 3...3]], "2 is its key's newest; 3 is a tombstone 2 s old; 4 is 2 s too young")
        #expect(plan.tombstoneDue == 7_000)
    }

    @Test(arguments: StoreKind.allCases) func aStreamThatIsNotCompactedKeepsEveryEvent(_ kind: StoreKind) async throws {
        try await EventExpiryTests.withClockedStore(kind) { store, _ in
            _ = try await store.create("plain", config: .unlimited)
            try await Self.append(store, ["a1", "a2"], to: "plain", key: "a")
            #expect(try await store.compact("plain").removed == 0)
            #expect(store.info("plain")?.eventCount == 2)
            #expect(store.info("plain")?.compactedAt == nil)
        }
    }
}
