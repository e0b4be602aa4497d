import Foundation
import GRDB
import ReplayTesting
import Testing

@testable import ReplayStore

/// A SQLite batch begins its transaction at its first statement: a batch that needs none
/// (a barrier; a group member asking for work when there is none, which waits in memory)
/// takes no lock of the database and commits nothing.
@Suite("SQLite transactions")
struct SQLiteTransactionTests {
    @Test func aBatchWithoutStatementsTakesNoWriteLock() async throws {
        try await withTemporaryDirectory { folder in
            let store = try openStore(folder, autoCreate: StreamConfig(capacity: 100))
            defer { store.close() }
            _ = try await store.append(Data("a".utf8), to: "s")
            // Another connection holds the file's write lock; a transaction begun up front
            // would wait for it (the store's busy timeout), then fail as locked.
            var configuration = Configuration()
            configuration.allowsUnsafeTransactions = true  // the lock is held across accesses
            let other = try DatabaseQueue(path: folder + "/replay.sqlite", configuration: configuration)
            try await other.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
            try await store.barrier()
            try await other.writeWithoutTransaction { try $0.execute(sql: "ROLLBACK") }
            // A batch with statements still begins, and commits, as before.
            #expect(try await store.append(Data("b".utf8), to: "s").sequence == 2)
        }
    }
}
