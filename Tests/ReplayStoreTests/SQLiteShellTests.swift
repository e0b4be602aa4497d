import Foundation
import ReplayCore
import ReplayStore
import ReplaySync
import ReplayTesting
import Testing

/// People read the log with the sqlite3 shell while the store is open; the README's
/// queries must work as printed.
@Suite("sqlite3 shell")
struct SQLiteShellTests {
    @Test func readmeQueriesWorkWhileTheStoreIsOpen() async throws {
        try await Prerequisite.sqlite3.require()
        try await withTemporaryDirectory { directory in
            let now = Locked(Date(timeIntervalSince1970: 1_800_000_000.25))
            let store = try openStore(directory, autoCreate: .init(capacity: 100), clock: { now.value })
            defer { store.close() }
            _ = try await store.appendAll([#"{"id":1}"#, #"{"id":2}"#], to: "orders")
            let db = directory + "/replay.sqlite"

            let events = try await shell(#"sqlite3 '\#(db)' "SELECT seq, time, payload FROM events WHERE stream='orders' ORDER BY seq""#)
            #expect(
                events == """
                    1|2027-01-15T08:00:00.250Z|{"id":1}
                    2|2027-01-15T08:00:00.250Z|{"id":2}

                    """)
            let streams = try await shell(#"sqlite3 '\#(db)' "SELECT name, capacity, first_seq, last_seq, event_count, byte_count, terminal FROM streams""#)
            #expect(streams == "orders|100|1|2|2|16|\n")
            // The writer is not blocked by the shell: appends go on.
            #expect(try await store.appendAll(["after"], to: "orders") == [3])
        }
    }
}
