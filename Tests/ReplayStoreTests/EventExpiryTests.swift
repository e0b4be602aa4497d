import Foundation
import ReplayModel
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// Per-event expiry on both stores, on the store's clock: an expired event is never read
/// (a read ends before it, as at a hole), `verify` still checks it, and the retention
/// pass's removal takes it out, from the front as retention does or leaving a hole, a
/// bounded number of runs per batch.
@Suite("Event expiry")
struct EventExpiryTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// Appends `payload` to `stream`, living `ttl` seconds if given.
    static func append(_ store: EventStore, _ payload: String, to stream: String, ttl: Double? = nil) async throws {
        var write = StreamWrite(stream: stream, payloads: [Data(payload.utf8)])
        write.ttl = ttl.flatMap(EventTTL.init(seconds:))
        _ = try await store.write(write)
    }

    /// A store of `kind` whose clock is `now`, starting at `start`.
    static func withClockedStore(_ kind: StoreKind, _ body: (EventStore, Locked<Date>) async throws -> Void) async throws {
        let now = Locked(Self.start)
        try await withStoreLocation(kind) { location in
            let store = try openStore(location, clock: { now.value })
            defer { store.close() }
            try await body(store, now)
        }
    }

    @Test(arguments: StoreKind.allCases) func anExpiredEventIsNeverReadAndItsRemovalLeavesAHole(_ kind: StoreKind) async throws {
        try await Self.withClockedStore(kind) { store, now in
            _ = try await store.create("s", config: .unlimited)
            for (payload, ttl) in [("e1", nil), ("e2", 10.0), ("e3", nil), ("e4", 10.0), ("e5", 30.0)] as [(String, Double?)] {
                try await Self.append(store, payload, to: "s", ttl: ttl)
            }
            #expect(try store.read("s", from: 1).map(\.sequence) == [1, 2, 3, 4, 5], "nothing has expired yet")
            #expect(try store.nextExpiry() == Timestamp.millis(Self.start) + 10_000)

            now.withLock { $0 += 10 }
            #expect(try store.read("s", from: 1).map(\.sequence) == [1], "a read ends before an expired event, as at a hole")
            #expect(try store.read("s", from: 2).map(\.sequence) == [3])
            #expect(try store.read("s", from: 4).map(\.sequence) == [5])
            #expect(try store.verify("s").events == 5, "verify checks what is stored, expired or not")
            #expect(store.info("s")?.eventCount == 5, "counted until removed")

            #expect(try await store.expireEvents() == false, "one batch took every expired event")
            let info = try #require(store.info("s"))
            #expect(info.eventCount == 3)
            #expect(info.removedEvents == 2)
            #expect(info.byteCount == 6)
            #expect(try await scalar(store, "SELECT count(*) FROM event_holes") == 2)
            #expect(try store.nextExpiry() == Timestamp.millis(Self.start) + 30_000)
            let report = try store.verify("s")
            #expect(report.isIntact)
            #expect(report.events == 3)
            #expect(try await store.expireEvents() == false)
            #expect(store.info("s")?.eventCount == 3, "nothing else expired")
        }
    }

    @Test(arguments: StoreKind.allCases) func aStreamsDefaultExpiresItsEventsFromTheFront(_ kind: StoreKind) async throws {
        try await Self.withClockedStore(kind) { store, now in
            _ = try await store.create("sessions", config: StreamConfig(capacity: nil, eventTTL: 5))
            for index in 1...3 { try await Self.append(store, "e\(index)", to: "sessions") }
            now.withLock { $0 += 2 }
            try await Self.append(store, "e4", to: "sessions", ttl: 60)
            now.withLock { $0 += 4 }
            #expect(try store.read("sessions", from: 1).map(\.sequence) == [4])
            _ = try await store.expireEvents()
            let info = try #require(store.info("sessions"))
            #expect(info.firstSequence == 4, "the oldest went as retention takes them: no hole")
            #expect(info.removedEvents == 0)
            #expect(info.eventCount == 1)
            #expect(try store.verify("sessions").isIntact)
        }
    }

    @Test(arguments: StoreKind.allCases) func expiriesScatteredThroughAStreamAreRemovedABoundedNumberOfRunsPerBatch(
        _ kind: StoreKind
    ) async throws {
        try await Self.withClockedStore(kind) { store, now in
            _ = try await store.create("s", config: .unlimited)
            // Every other event expires: each is a run of its own.
            let runs = WriterRules<SQLiteTransaction>.expiredRunsPerBatch + 44
            for index in 0..<(2 * runs) { try await Self.append(store, "e\(index)", to: "s", ttl: index % 2 == 0 ? nil : 1) }
            now.withLock { $0 += 1 }
            #expect(try await store.expireEvents() == true, "more runs than one batch removes")
            #expect(store.info("s")?.removedEvents == WriterRules<SQLiteTransaction>.expiredRunsPerBatch)
            #expect(try await store.expireEvents() == false)
            let info = try #require(store.info("s"))
            #expect(info.eventCount == runs)
            #expect(try store.read("s", from: 1, limit: 10_000).count == 1, "every event kept is followed by a hole")
            #expect(try store.verify("s").isIntact)
        }
    }

    /// A source deleted while a fork reads from it keeps its events for the fork, and they
    /// expire for it as for anyone.
    @Test(arguments: StoreKind.allCases) func theEventsOfASourceKeptForItsForksExpireToo(_ kind: StoreKind) async throws {
        try await Self.withClockedStore(kind) { store, now in
            _ = try await store.create("source", config: .unlimited)
            for index in 1...3 { try await Self.append(store, "e\(index)", to: "source", ttl: index == 2 ? 1 : nil) }
            _ = try await store.write(StreamWrite(stream: "fork", payloads: [], create: .unlimited, fork: ForkRequest(source: "source", sequence: 3)))
            _ = try await store.delete("source")
            now.withLock { $0 += 1 }
            #expect(try store.read("fork", from: 2).map(\.sequence) == [3])
            #expect(try await store.expireEvents() == false)
            #expect(try store.nextExpiry() == nil, "its row is gone")
            #expect(try store.read("fork", from: 1).map(\.sequence) == [1])
            #expect(try store.read("fork", from: 2).map(\.sequence) == [3], "the fork reads on across its source's hole")
        }
    }

    /// A store sharing PostgreSQL with another hands the other's new events to its commit
    /// listeners (the daemon's rings) as it reads them, without their expiry; once it has
    /// seen that events may expire, it no longer does, and its readers read them from the
    /// store, which leaves out the expired ones.
    @Test func anotherStoresEventsAreNotHandedOnOnceEventsMayExpire() async throws {
        try await TestPostgres.withDatabase { url in
            let first = try openStore(url)
            let second = try openStore(url)
            defer {
                first.close()
                second.close()
            }
            let handed = Locked<[UInt64]>([])
            second.onCommit { batch in handed.withLock { $0 += batch.changes["s"]?.appended.map(\.sequence) ?? [] } }
            _ = try await first.create("s", config: .unlimited)
            // A stream the other store learns of with its events is read from the store.
            try await eventually("the other store learns of the stream") { second.info("s") != nil }
            try await Self.append(first, "a", to: "s")
            try await eventually("the other store reads the event and hands it on") { handed.value.contains(1) }
            try await Self.append(first, "b", to: "s", ttl: 3_600)
            #expect(try second.nextExpiry() != nil, "the retention pass's look")
            try await Self.append(first, "c", to: "s")
            try await eventually("the other store learns of the third event") { second.info("s")?.lastSequence == 3 }
            #expect(!handed.value.contains(3), "\(handed.value)")
        }
    }
}
