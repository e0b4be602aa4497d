import Foundation
import ReplayModel
import ReplayTesting
import Testing

@testable import ReplayStore

/// Each stream's hash chain: written with every event, checked on every read from the
/// store, recomputed by `verify`; on both databases.
@Suite("Hash chains")
struct HashChainTests {
    /// The format docs/INTEGRITY.md gives, pinned to hashes computed apart from this code
    /// (Python's hashlib over the documented bytes).
    @Test func aLinkIsSHA256OverThePreviousHashAndTheEventAsDocumented() {
        let first = HashChain.link(after: .zero, stream: "orders", sequence: 1, millis: 1_764_000_000_000, payload: Data("hello".utf8))
        #expect(first.hex == "1ec260948b70d8431c20fb9676d33589838fcf1b3cec94af0fee34ed1d6a00de")
        let second = HashChain.link(after: first, stream: "orders", sequence: 2, millis: 1_764_000_000_001, payload: Data())
        #expect(second.hex == "758ffd6ed1feca97aa862975111e49ed33541658e1685c33d1753d9846122510")
        #expect(EventHash(hex: first.hex) == first)
        #expect(EventHash(hex: "xyz") == nil)
    }

    /// A keyed event's link covers its key: marker byte 1, the key's length and the key
    /// (tools/verify_checkpoint.py's `link` gives the same hashes).
    @Test func aKeyedEventsLinkCoversItsKey() {
        let first = HashChain.link(after: .zero, stream: "orders", sequence: 1, millis: 1_764_000_000_000, payload: Data("hello".utf8))
        let keyed = HashChain.link(
            after: first, stream: "orders", sequence: 2, millis: 1_764_000_000_001, key: EventKey("customer-7"),
            payload: Data(#"{"tier":"gold"}"#.utf8))
        #expect(keyed.hex == "fb1bdabb544690addacafb5fcf63ea54c23a3b9e07315940f0cc6958f7b72a16")
        let tombstone = HashChain.link(after: keyed, stream: "orders", sequence: 3, millis: 1_764_000_000_002, key: EventKey("café"), payload: Data())
        #expect(tombstone.hex == "e2e159c7762daaf011b72e7adc1c01f0d39243e8bf6f7d4993aa8c1f3db758ae")
        let unkeyed = HashChain.link(after: first, stream: "orders", sequence: 2, millis: 1_764_000_000_001, payload: Data(#"{"tier":"gold"}"#.utf8))
        #expect(unkeyed != keyed, "the same event without its key is another link")
    }

    /// Every stored event holds its link; the row keeps the head; reads and `verify` pass.
    @Test(arguments: StoreKind.allCases) func everyEventIsStoredWithItsLink(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location, autoCreate: .unlimited)
            defer { store.close() }
            let events = try await [store.append(Data("a".utf8), to: "orders"), store.append(Data("bb".utf8), to: "orders")]
            var previous = EventHash.zero
            for event in events {
                let millis = Timestamp.millis(event.time)
                previous = HashChain.link(after: previous, stream: "orders", sequence: event.sequence, millis: millis, payload: event.payload)
            }
            #expect(try await storedHex(store, "orders", 2) == previous.hex)
            #expect(try store.texts("orders") == ["a", "bb"])
            let report = try store.verify("orders")
            var expected = ChainReport(stream: "orders")
            expected.checked(1, bytes: 1)
            expected.checked(2, bytes: 2)
            expected.lastHash = previous.hex
            #expect(report == expected)
        }
    }

    /// A payload changed in the database is never read as good: the read fails naming it,
    /// events before and after it still read, other streams too, and `verify` names it.
    @Test(arguments: StoreKind.allCases) func anEditedPayloadFailsItsReadAndVerify(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll(["one", "two", "three", "four"], to: "orders")
            _ = try await store.appendAll(["x"], to: "other")
            try await edit(store, kind, payload: "TWO", stream: "orders", sequence: 2)

            #expect(throws: StoreError.self) { try store.read("orders", from: 1) }
            do {
                _ = try store.read("orders", from: 2)
                Issue.record("a corrupt event was read")
            } catch {
                guard case StoreError.corruptEvent(let stream, let sequence, _, _) = error else { throw error }
                #expect(stream == "orders" && sequence == 2)
            }
            #expect(try store.read("orders", from: 1, through: 1).map(\.payload) == [Data("one".utf8)])
            #expect(try store.read("orders", from: 3).map(\.payload) == [Data("three".utf8), Data("four".utf8)])
            #expect(try store.texts("other") == ["x"])
            let report = try store.verify("orders")
            #expect(report.broken?.sequence == 2 && report.events == 1)
            #expect(try store.verify("other").isIntact)
        }
    }

    /// A row removed from the middle breaks the link of the one after it; rows removed at
    /// the end are missing events.
    @Test(arguments: StoreKind.allCases) func aRemovedEventBreaksTheChain(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll(["1", "2", "3", "4", "5"], to: "s")
            try await remove(store, kind, stream: "s", sequence: 3)
            #expect(try store.verify("s").broken?.sequence == 4)
            try await remove(store, kind, stream: "s", sequence: 5)
            try await remove(store, kind, stream: "s", sequence: 4)
            let report = try store.verify("s")
            #expect(report.broken == ChainReport.Break(sequence: 3, expected: "an event", found: "none"))
        }
    }

    /// A stream checked in ranges at once gives one thread's report: whole, or broken at
    /// the first bad event though a later range breaks too; an event missing at a range's
    /// end is named as missing.
    @Test(arguments: StoreKind.allCases) func verifyingInRangesAtOnceGivesOneThreadsReport(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll((1...20).map { "e\($0)" }, to: "s")
            let whole = try store.verify("s", parts: 1)
            #expect(whole.isIntact && whole.events == 20)
            #expect(try store.verify("s", parts: 4, eventsPerPart: 2) == whole)
            #expect(try store.verify("s", through: 12, parts: 4, eventsPerPart: 2) == store.verify("s", through: 12, parts: 1))

            // Ranges of five: 1-5, 6-10, 11-15, 16-20.
            try await edit(store, kind, payload: "E17", stream: "s", sequence: 17)
            try await edit(store, kind, payload: "E13", stream: "s", sequence: 13)
            let one = try store.verify("s", parts: 1)
            #expect(one.broken?.sequence == 13 && one.events == 12)
            #expect(try store.verify("s", parts: 4, eventsPerPart: 2) == one)

            try await remove(store, kind, stream: "s", sequence: 5)
            #expect(try store.verify("s", parts: 1).broken?.sequence == 6)
            let ranges = try store.verify("s", parts: 4, eventsPerPart: 2)
            #expect(ranges.broken == ChainReport.Break(sequence: 5, expected: "an event", found: "none") && ranges.events == 4)
        }
    }

    /// Retention removes events, not the chain: the base holds the last removed hash, so
    /// reads from the new start check, across restarts; a fork goes on from its source's
    /// chain; a reset keeps the chain going.
    @Test(arguments: StoreKind.allCases) func theChainOutlivesRetentionRestartsForksAndResets(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            do {
                let store = try openStore(location, autoCreate: .unlimited)
                defer { store.close() }
                _ = try await store.create("capped", config: StreamConfig(capacity: 3))
                _ = try await store.appendAll((1...10).map { "e\($0)" }, to: "capped")
                #expect(try store.texts("capped") == ["e8", "e9", "e10"])
                #expect(try store.verify("capped").isIntact)
                _ = try await store.appendAll((1...6).map { "s\($0)" }, to: "source")
                _ = try await store.write(
                    StreamWrite(stream: "fork", payloads: [], create: .unlimited, fork: ForkRequest(source: "source", sequence: 4)))
                _ = try await store.appendAll(["f5", "f6"], to: "fork")
                #expect(try store.texts("fork") == ["s1", "s2", "s3", "s4", "f5", "f6"])
                _ = try await store.appendAll(["r1", "r2"], to: "reset")
                _ = try await store.reset("reset", keepHistory: false)
            }
            let store = try openStore(location, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll(["e11"], to: "capped")
            _ = try await store.appendAll(["f7"], to: "fork")
            _ = try await store.appendAll(["r3"], to: "reset")
            #expect(try store.texts("capped") == ["e9", "e10", "e11"])
            #expect(try store.texts("fork") == ["s1", "s2", "s3", "s4", "f5", "f6", "f7"])
            #expect(try store.texts("reset") == ["r3"])
            for stream in ["capped", "source", "fork", "reset"] {
                let report = try store.verify(stream)
                #expect(report.isIntact, "\(stream): \(report)")
            }
            #expect(try store.verify("fork").events == 7)
        }
    }

    // MARK: Doing what someone with the database's own tools could do

    private func storedHex(_ store: EventStore, _ stream: String, _ sequence: Int) async throws -> String {
        let sql = "SELECT hash FROM events WHERE stream = '\(stream)' AND seq = \(sequence)"
        guard EventStore.isPostgres(store.location) else {
            return try store.query { db in try String.fetchOne(db, sql: sql) } ?? ""
        }
        return try await TestPostgres.psql(store.location, sql)
    }

    private func edit(_ store: EventStore, _ kind: StoreKind, payload: String, stream: String, sequence: Int) async throws {
        switch kind {
        case .sqlite:
            try await shell(
                "sqlite3 '\(store.location)' \"UPDATE event_log SET payload = CAST('\(payload)' AS BLOB) WHERE key = ((SELECT id FROM streams WHERE name = '\(stream)') << 40) | \(sequence)\""
            )
        case .postgres:
            try await TestPostgres.psql(
                store.location,
                "UPDATE event_log SET payload = convert_to('\(payload)', 'UTF8') WHERE seq = \(sequence) AND stream_id = (SELECT id FROM streams WHERE name = '\(stream)')"
            )
        }
    }

    private func remove(_ store: EventStore, _ kind: StoreKind, stream: String, sequence: Int) async throws {
        switch kind {
        case .sqlite:
            try await shell(
                "sqlite3 '\(store.location)' \"DELETE FROM event_log WHERE key = ((SELECT id FROM streams WHERE name = '\(stream)') << 40) | \(sequence)\"")
        case .postgres:
            try await TestPostgres.psql(
                store.location, "DELETE FROM event_log WHERE seq = \(sequence) AND stream_id = (SELECT id FROM streams WHERE name = '\(stream)')")
        }
    }
}
