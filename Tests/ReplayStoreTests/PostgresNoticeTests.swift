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
}
