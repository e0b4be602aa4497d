import Foundation
import GRDB
import ReplayModel
import ReplayTesting
import Testing

@testable import ReplayStore

/// A key's current value is its newest retained event, read the same on both stores where
/// that event is not simply the key's newest row: a fork's source that went on after the
/// fork point, a reader's point the writer has passed, retention that took the newest.
/// SQLite keeps each key's newest event in `event_keys`; PostgreSQL indexes every keyed
/// event by its key.
@Suite("A key's newest event")
struct NewestKeyTests {
    @Test(arguments: StoreKind.allCases) func aForkAndAnEarlierPointSeeTheKeysEventBeforeTheNewerOnes(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location, autoCreate: .unlimited)
            defer { store.close() }
            // source: a1 b2 a3 | the fork's point | a4 b5 c6; the fork: a1 b2 a3 | b7 (its 4)
            _ = try await store.create("source", config: .unlimited)
            for (payload, key) in [("a1", "a"), ("b2", "b"), ("a3", "a"), ("a4", "a"), ("b5", "b"), ("c6", "c")] {
                try await store.append(payload, to: "source", key: key)
            }
            _ = try await store.write(StreamWrite(stream: "fork", payloads: [], create: .unlimited, fork: ForkRequest(source: "source", sequence: 3)))
            try await store.append("b7", to: "fork", key: "b")
            func value(_ stream: String, _ key: String) throws -> String? {
                try store.latest(stream, key: EventKey(key)!).map { String(decoding: $0.payload, as: UTF8.self) }
            }
            #expect(try value("source", "a") == "a4")
            #expect(try value("fork", "a") == "a3", "the source's a4 came after the fork point")
            #expect(try value("fork", "b") == "b7")
            #expect(try value("fork", "c") == nil, "c came after the fork point")
            #expect(try store.currentEvents(of: "fork", through: .max) == [3, 4], "a3, and the fork's own b7 (its 4: a fork numbers on from its point)")
            #expect(try store.keyCount(of: "fork", upTo: 100) == 2)
            // A reader's point before the writer's newest: each key as it stood then.
            #expect(try store.currentEvents(of: "source", through: 4) == [2, 4])
            #expect(try store.currentEvents(of: "source", through: 2) == [1, 2])
            #expect(try store.currentEvents(of: "source", through: .max) == [4, 5, 6])
        }
    }

    @Test(arguments: StoreKind.allCases) func aKeyWhoseNewestEventRetentionTookHasNoValue(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.create("capped", config: StreamConfig(capacity: 3))
            for (payload, key) in [("a1", "a"), ("b2", "b"), ("a3", "a"), ("c4", "c"), ("c5", "c")] {
                try await store.append(payload, to: "capped", key: key)
            }
            // Retained: a3 c4 c5; b's only event went.
            #expect(try store.latest("capped", key: EventKey("b")!) == nil)
            #expect(try store.latest("capped", key: EventKey("a")!).map { String(decoding: $0.payload, as: UTF8.self) } == "a3")
            #expect(try store.currentEvents(of: "capped", through: .max) == [3, 5])
            if kind == .sqlite {
                // The trimmed key's row went with its event: the table does not grow with
                // keys retention removed.
                #expect(try await scalar(store, "SELECT count(*) FROM event_keys") == 2)
                #expect(try await scalar(store, "SELECT count(*) FROM event_keys WHERE event_key = 'b'") == 0)
            }
            _ = try await store.delete("capped")
            if kind == .sqlite { #expect(try await scalar(store, "SELECT count(*) FROM event_keys") == 0) }
        }
    }

    /// A database written before `event_keys` gets each key's newest event from its events.
    @Test func keyedEventsStoredBeforeTheTableAreFoundAfterTheUpgrade() async throws {
        try await withTemporaryDirectory { directory in
            try await makeDatabase(
                in: directory, upTo: "0017_source_ticks",
                """
                INSERT INTO streams (id, name, created_at, first_seq, last_seq, event_count, byte_count)
                VALUES (1, 'kv', '2026-01-01T00:00:00.000Z', 1, 3, 3, 6);
                INSERT INTO event_log (key, time, payload, event_key) VALUES
                    ((1 << 40) | 1, 0, 'a1', 'a'), ((1 << 40) | 2, 0, 'b2', 'b'), ((1 << 40) | 3, 0, 'a3', 'a');
                """)
            let store = try openStore(directory)
            defer { store.close() }
            #expect(try await scalar(store, "SELECT seq FROM event_keys WHERE event_key = 'a'") == 3)
            #expect(try await scalar(store, "SELECT seq FROM event_keys WHERE event_key = 'b'") == 2)
            #expect(try store.currentEvents(of: "kv", through: .max) == [2, 3])
        }
    }
}

extension EventStore {
    /// Appends one event with a key to a stream that exists.
    fileprivate func append(_ payload: String, to stream: String, key: String) async throws {
        var write = StreamWrite(stream: stream, payloads: [Data(payload.utf8)])
        write.key = EventKey(key)
        _ = try await self.write(write)
    }
}
