import Foundation
import GRDB
import ReplayCore
import ReplayStore
import ReplaySync
import ReplayTesting
import Testing

@Suite("Retention")
struct RetentionTests {
    @Test(
        arguments: StoreKind.allCases, [(0, [String]()), (1, ["e5"]), (3, ["e3", "e4", "e5"]), (nil, ["e1", "e2", "e3", "e4", "e5"])] as [(Int?, [String])])
    func capacityKeepsTheLastN(_ kind: StoreKind, _ example: (capacity: Int?, expected: [String])) async throws {
        let (capacity, expected) = example
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory)
            defer { store.close() }
            _ = try await store.create("s", config: StreamConfig(capacity: capacity))
            #expect(try await store.appendAll((1...5).map { "e\($0)" }, to: "s") == [1, 2, 3, 4, 5])
            #expect(try store.texts("s") == expected)
            let info = try #require(store.info("s"))
            #expect(info.eventCount == expected.count)
            #expect(info.firstSequence == UInt64(6 - expected.count))
            #expect(info.byteCount == expected.count * 2)
            let rows = try await scalar(store, "SELECT event_count FROM streams WHERE name = 's'")
            #expect(rows == expected.count, "the stream row's counters are updated in the same transaction")
        }
    }

    @Test(arguments: StoreKind.allCases) func maxBytesDropsTheOldestUntilItFits(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory)
            defer { store.close() }
            _ = try await store.create("s", config: StreamConfig(capacity: nil, maxBytes: 10))
            _ = try await store.appendAll(["aaaa", "bbbb", "cccc"], to: "s")
            #expect(try store.texts("s") == ["bbbb", "cccc"])
            _ = try await store.appendAll(["0123456789AB"], to: "s")
            #expect(try store.texts("s") == [], "an event larger than the limit is not kept either")
            #expect(store.info("s")?.byteCount == 0)
            #expect(store.info("s")?.lastSequence == 4)
        }
    }

    @Test(arguments: StoreKind.allCases) func maxAgeExpiresOldEventsOnAppendAndOnEnforcement(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let now = Locked(Date(timeIntervalSince1970: 1_800_000_000))
            let store = try openStore(directory, clock: { now.value })
            defer { store.close() }
            _ = try await store.create("s", config: StreamConfig(capacity: nil, maxAge: 60))
            _ = try await store.appendAll(["old"], to: "s")
            now.withLock { $0 += 30 }
            _ = try await store.appendAll(["mid"], to: "s")
            now.withLock { $0 += 45 }
            _ = try await store.appendAll(["new"], to: "s")
            #expect(try store.texts("s") == ["mid", "new"])
            now.withLock { $0 += 3600 }
            try await store.enforceRetention()
            #expect(try store.texts("s") == [])
            #expect(store.info("s")?.lastSequence == 3, "expiry never resets sequence numbers")
        }
    }

    /// A stream's time-to-live slides with every read and write (on virtual time); a fixed
    /// expiry does not. The writer deletes expired streams at its retention pass.
    @Test(arguments: StoreKind.allCases) func aTimeToLiveSlidesWithReadsAndWritesAndAFixedExpiryDoesNot(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let now = Locked(start)
            let store = try openStore(directory, clock: { now.value })
            defer { store.close() }
            _ = try await store.write(StreamWrite(stream: "idle", payloads: [], create: StreamConfig(capacity: nil, expiry: .idle(seconds: 10))))
            _ = try await store.write(StreamWrite(stream: "fixed", payloads: [], create: StreamConfig(capacity: nil, expiry: .at(start + 15))))
            now.withLock { $0 += 9 }
            #expect(!store.isExpired("idle"))
            store.noteRead("idle")
            now.withLock { $0 += 9 }
            #expect(!store.isExpired("idle"), "the read at 9 s moved the deadline to 19 s")
            _ = try await store.write(StreamWrite(stream: "idle", payloads: [Data("x".utf8)]))
            now.withLock { $0 += 9 }
            #expect(!store.isExpired("idle"), "the write at 18 s moved it to 28 s")
            #expect(store.isExpired("fixed"))
            try await store.enforceRetention()
            #expect(store.info("fixed") == nil)
            #expect(store.info("idle") != nil)
            now.withLock { $0 += 2 }
            #expect(store.isExpired("idle"))
            try await store.enforceRetention()
            #expect(store.info("idle") == nil)
        }
    }
}
