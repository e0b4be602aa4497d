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

    @Test(arguments: StoreKind.allCases) func aLongPassGoesInBatchesFromTheFrontAndAsHoles(_ kind: StoreKind) async throws {
        try await EventExpiryTests.withClockedStore(kind) { store, _ in
            _ = try await store.create("kv", config: Self.compacted())
            // a: 1...1000, b: 1001...2000, a: 2001...3000, b: 3001...4000, a: 4001...5000.
            for (index, key) in ["a", "b", "a", "b", "a"].enumerated() {
                try await Self.append(store, (1...1_000).map { "\(key)\(index * 1_000 + $0)" }, to: "kv", key: key)
            }
            // Rows 1...4096 make the first batch, 4097...5000 the second.
            #expect(WriterRules<SQLiteTransaction>.compactionRowsPerBatch == 4_096)
            let first = try await store.compact("kv", from: 0, through: nil)
            #expect(first.next == 4_097)
            #expect(first.removed == 3_999 + 96)
            let pass = try await store.compact("kv")
            #expect(pass.removed == 903)
            let info = try #require(store.info("kv"))
            #expect(info.firstSequence == 4_000, "b's newest")
            #expect(info.removedEvents == 999, "4001...4999: one hole, across both batches")
            #expect(info.eventCount == 2)
            #expect(info.compactedEvents == 4_998)
            #expect(try Self.value(store, "kv", "a") == "a5000")
            #expect(try Self.value(store, "kv", "b") == "b4000")
            #expect(try store.verify("kv").isIntact)
            if kind == .sqlite {
                #expect(try await scalar(store, "SELECT count(*) FROM event_holes") == 1)
            }
        }
    }

    @Test(arguments: StoreKind.allCases) func aBatchRemovesABoundedNumberOfRunsAndTheNextGoesOnFromThere(_ kind: StoreKind) async throws {
        try await EventExpiryTests.withClockedStore(kind) { store, _ in
            _ = try await store.create("kv", config: Self.compacted())
            // a, x, a, x…: each superseded a is a run of its own between two x.
            let runs = WriterRules<SQLiteTransaction>.compactionRunsPerBatch
            for index in 0...(runs + 1) {
                try await Self.append(store, ["a\(index)"], to: "kv", key: "a")
                try await Self.append(store, ["x\(index)"], to: "kv")
            }
            let first = try await store.compact("kv", from: 0, through: nil)
            #expect(first.removed == runs)
            #expect(first.next == UInt64(2 * runs + 1), "the next batch starts at the first run left")
            let rest = try await store.compact("kv", from: try #require(first.next), through: first.through)
            #expect(rest.removed == 1, "the run left, and not the last a: the key's newest")
            #expect(rest.next == nil)
            #expect(store.info("kv")?.eventCount == 2 * (runs + 2) - (runs + 1))
            #expect(try store.verify("kv").isIntact)
        }
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
