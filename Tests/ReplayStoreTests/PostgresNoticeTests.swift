import Foundation
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// What a daemon tells the others sharing its PostgreSQL database after a commit.
@Suite("PostgreSQL store: commit notices")
struct PostgresNoticeTests {
    /// A batch that refreshes a stream (another daemon's notice) and then appends to it
    /// (a publish that arrived with the notice) must still announce its append: the other
    /// daemons would otherwise never learn of the new events. Seen as a two-daemon test
    /// waiting forever on the last 20 of 800 events.
    @Test func aBatchThatRefreshesAStreamAndWritesItAnnouncesTheWrite() async throws {
        try await TestPostgres.withDatabase { url in
            let other = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { other.close() }
            _ = try await other.append(Data("first".utf8), to: "shared")
            // A writer of its own, committing one chosen batch on this thread (no LISTEN
            // session, so no other batch runs beside it).
            let location = try #require(PostgresLocation(url))
            let writer = try PostgresLog(location, options: .init(), listeners: CommitListeners(), now: Date.init)
            let appended = Locked<Result<StoredEvent, StoreError>?>(nil)
            writer.commit([
                .refresh(streams: ["shared"]),
                .appendWithCompletion(stream: "shared", payload: Data("second".utf8)) { result in appended.withLock { $0 = result } },
            ])
            #expect(try appended.withLock { $0 }?.get().sequence == 2)
            let deadline = ContinuousClock.now + .seconds(20)
            while other.info("shared")?.lastSequence != 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(other.info("shared")?.lastSequence == 2, "the other store heard of the append")
            writer.close()
        }
    }

    /// Another daemon's new events are read back (for the hubs' tail rings) only for a
    /// stream someone here reads live; a stream no one here reads is learned from its row
    /// alone, so that each daemon does not read back everything every other one writes.
    @Test func anotherDaemonsEventsAreReadBackOnlyForStreamsReadHere() async throws {
        try await TestPostgres.withDatabase { url in
            let other = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { other.close() }
            _ = try await other.append(Data("first".utf8), to: "watched")
            _ = try await other.append(Data("first".utf8), to: "unwatched")
            // A writer of its own (see above), started before the next events are appended.
            let listeners = CommitListeners()
            listeners.setLiveReaders { $0 == "watched" }
            let heard = Locked<[String: CommitBatch.Change]>([:])
            listeners.add { batch in heard.withLock { $0.merge(batch.changes) { $1 } } }
            let writer = try PostgresLog(try #require(PostgresLocation(url)), options: .init(), listeners: listeners, now: Date.init)
            defer { writer.close() }
            _ = try await other.append(Data("second".utf8), to: "watched")
            _ = try await other.append(Data("second".utf8), to: "unwatched")
            writer.commit([.refresh(streams: ["watched", "unwatched"])])
            let changes = heard.value
            #expect(changes["watched"]?.info?.lastSequence == 2)
            #expect(changes["watched"]?.appended.map { String(decoding: $0.payload, as: UTF8.self) } == ["second"])
            #expect(changes["unwatched"]?.info?.lastSequence == 2, "its row is read: the catalog learns it")
            #expect(changes["unwatched"]?.appended.isEmpty == true, "its events are not read back")
        }
    }
}
