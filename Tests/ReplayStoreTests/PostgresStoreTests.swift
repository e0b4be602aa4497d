import Foundation
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// What only the PostgreSQL store has: its schema's refusals, its shell view, its URLs.
/// Everything the two stores share runs in the conformance tests (`StoreKind`).
@Suite("PostgreSQL store")
struct PostgresStoreTests {
    @Test func theEventsViewReadsLikeSQLitesWithPsql() async throws {
        try await TestPostgres.withDatabase { url in
            let store = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { store.close() }
            _ = try await store.append(Data("hello".utf8), to: "orders")
            let row = try await TestPostgres.psql(url, "SELECT stream, seq, convert_from(payload, 'UTF8'), length(time) FROM events")
            #expect(row == "orders|1|hello|24")
        }
    }

    @Test func aDatabaseWithANewerSchemaIsRefusedAndLeftAlone() async throws {
        try await TestPostgres.withDatabase { url in
            try EventStore(location: url).close()
            try await TestPostgres.psql(url, "INSERT INTO replay_migrations (identifier) VALUES ('9999_from_the_future')")
            #expect(throws: StoreError.newerSchema(path: url, unknownMigrations: ["9999_from_the_future"])) {
                try EventStore(location: url)
            }
            // This build's migrations and the future one, nothing more.
            #expect(try await TestPostgres.psql(url, "SELECT count(*) FROM replay_migrations") == "\(Migrations.embeddedPostgres.count + 1)")
        }
    }

    @Test func anUnreachableServerOrATLSDemandIsAClearErrorAtOpen() throws {
        // A port nothing listens on (bound, never listened).
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        do {
            _ = try EventStore(location: "postgres://replay:secret@127.0.0.1:\(port)/replay")
            Issue.record("opened a store on a closed port")
        } catch {
            guard case .unavailable(let reason) = error else { throw TestFailure("expected unavailable, got \(error)") }
            #expect(!reason.contains("secret"), "the password stays out of messages: \(reason)")
        }
        #expect(throws: StoreError.self) { try EventStore(location: "postgresql://replay@127.0.0.1:\(port)/replay?sslmode=require") }
    }

    /// A page PostgreSQL packs into one value ends at the event that reaches the read's
    /// bytes: sized from small payloads, a page that meets large ones must not pack them
    /// all (thousands of large payloads would pass PostgreSQL's 1 GB for a value).
    @Test func aPackedPageEndsAtTheEventThatReachesItsBytes() async throws {
        try await TestPostgres.withDatabase { url in
            let store = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { store.close() }
            for _ in 0..<10 { store.append(Data(repeating: 1, count: 10), to: "s") { _ in } }
            for _ in 0..<9 { store.append(Data(repeating: 2, count: 100_000), to: "s") { _ in } }
            _ = try await store.append(Data(repeating: 2, count: 100_000), to: "s")
            let session = PostgresSession(try #require(PostgresLocation(url)), logger: .init(label: "test"))
            defer { session.close() }
            let id = try #require(Int64(try await TestPostgres.psql(url, "SELECT id FROM streams WHERE name = 's'")))
            func packed(bytes: Int) throws -> Int {
                try PostgresTransaction.packedPage(session, stream: id, from: 1, through: 20, bytes: bytes, expiredBy: .min)?.events.readableBytes ?? 0
            }
            // Sequence number, time, payload size, trace context, hash and key sizes; and the hash.
            let header = 26 + 32
            #expect(try packed(bytes: .max) == 20 * header + 10 * 10 + 10 * 100_000)
            // 100 bytes of small ones, then two large: the second reaches 250,000.
            #expect(try packed(bytes: 250_000) == 13 * header + 10 * 10 + 3 * 100_000)
            #expect(try packed(bytes: 1) == header + 10, "a page holds at least one event")
        }
    }
    /// The writer sends a batch's writes without waiting for each answer; a write that
    /// PostgreSQL refuses still fails its batch, and nothing of it is kept. (A row put in
    /// the way from outside: the next event's key is taken.)
    @Test func aWriteRefusedByPostgreSQLFailsItsBatchAndKeepsNothing() async throws {
        try await TestPostgres.withDatabase { url in
            let store = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { store.close() }
            #expect(try await store.append(Data("one".utf8), to: "s").sequence == 1)
            let id = try await TestPostgres.psql(url, "SELECT id FROM streams WHERE name = 's'")
            try await TestPostgres.psql(url, "INSERT INTO event_log (stream_id, seq, time, payload) VALUES (\(id), 2, 0, 'x')")
            await #expect(throws: StoreError.self) { try await store.append(Data("two".utf8), to: "s") }
            #expect(try await TestPostgres.psql(url, "SELECT last_seq, event_count FROM streams WHERE name = 's'") == "1|1")
            #expect(try await TestPostgres.psql(url, "SELECT count(*) FROM event_log WHERE payload = 'two'") == "0")

            try await TestPostgres.psql(url, "DELETE FROM event_log WHERE stream_id = \(id) AND seq = 2")
            #expect(try await store.append(Data("two".utf8), to: "s").sequence == 2)
            #expect(try await TestPostgres.psql(url, "SELECT last_seq, event_count FROM streams WHERE name = 's'") == "2|2")
        }
    }

    /// A writer under continuous load chains its transactions (`COMMIT AND CHAIN`): from
    /// the second batch it commits without going idle, its commit hands the next batch an
    /// open transaction, and saves it a `BEGIN` round trip.
    @Test func theWritersTransactionsChainUnderLoad() async throws {
        try await TestPostgres.withDatabase { url in
            let store = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { store.close() }
            let log = try #require(store.log as? PostgresLog)
            #expect(try await store.append(Data("first".utf8), to: "s").sequence == 1)
            let before = log.chainedBatches.value
            // Each append is submitted from the completion of the one before, which runs on
            // the writer's thread after its commit: the writer finds it queued and never goes
            // idle between the two. The first batch found the writer idle and the second's
            // commit is the first to chain, so from the third on each batch runs chained.
            #expect(try await Self.appendsInTurn(20, to: "s", store) == 21)
            #expect(log.chainedBatches.value - before >= 18)
            #expect(try await TestPostgres.psql(url, "SELECT last_seq, event_count, (SELECT count(*) FROM event_log) FROM streams") == "21|21|21")
        }
    }

    /// A transaction chained for requests that turn out to write nothing stays open only
    /// until the writer is idle.
    @Test func aChainedTransactionThatWroteNothingEndsWhenTheWriterIsIdle() async throws {
        try await TestPostgres.withDatabase { url in
            let store = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { store.close() }
            #expect(try await store.append(Data("first".utf8), to: "s").sequence == 1)
            let (barrierReached, reached) = AsyncStream<Void>.makeStream()
            let checked = DispatchSemaphore(value: 0)
            store.append(Data("second".utf8), to: "s") { _ in
                // On the writer's thread, after the commit. A payload past a batch's byte
                // limit (`WriteQueue.Limits`) is a batch of its own: its commit finds the
                // barrier waiting and chains, and the barrier's batch writes nothing.
                store.append(Data(count: 9 << 20), to: "s") { _ in }
                store.barrier { _ in
                    reached.yield()
                    checked.wait()  // the writer waits here until the test has looked
                }
            }
            for await _ in barrierReached { break }
            #expect(try await TestPostgres.psql(url, Self.openTransactions) == "1", "the big append's commit chained a transaction")
            checked.signal()
            // The idle writer's COMMIT is not waited for: look until it has run.
            try await eventually("the idle writer to end the chained transaction") {
                try await TestPostgres.psql(url, Self.openTransactions) == "0"
            }
            #expect(try await TestPostgres.psql(url, "SELECT last_seq FROM streams") == "3")
        }
    }

    /// Batches under load that fail (a row put in the way from outside takes an event's
    /// key) keep nothing, whether or not their transaction was chained, and the batches
    /// after the way is clear go on from where the stream stood.
    @Test func batchesThatFailUnderLoadKeepNothing() async throws {
        try await TestPostgres.withDatabase { url in
            let store = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { store.close() }
            #expect(try await store.append(Data("one".utf8), to: "s").sequence == 1)
            let id = try await TestPostgres.psql(url, "SELECT id FROM streams WHERE name = 's'")
            try await TestPostgres.psql(url, "INSERT INTO event_log (stream_id, seq, time, payload) VALUES (\(id), 300, 0, 'y')")
            let results = await Self.appendsUnderLoad(1_000, to: "s", store)
            // The appends before the batch that met the row, in order; that batch and every
            // one after it failed whole.
            let stored = results.compactMap { try? $0.get().sequence }
            let last = try #require(stored.last)
            #expect(stored == Array(2...last))
            #expect(last < 300)
            #expect(try await TestPostgres.psql(url, "SELECT last_seq, event_count FROM streams WHERE name = 's'") == "\(last)|\(last)")
            #expect(try await TestPostgres.psql(url, "SELECT count(*) FROM event_log WHERE stream_id = \(id)") == "\(last + 1)")

            try await TestPostgres.psql(url, "DELETE FROM event_log WHERE stream_id = \(id) AND seq = 300")
            #expect(try await store.append(Data("x".utf8), to: "s").sequence == last + 1)
            let counts = "SELECT last_seq, event_count, count(e.seq) FROM streams s JOIN event_log e ON e.stream_id = s.id GROUP BY s.id"
            #expect(try await TestPostgres.psql(url, counts) == "\(last + 1)|\(last + 1)|\(last + 1)")
        }
    }

    /// Event rows reference their stream by id alone, with no foreign key to delete them
    /// with it (migration 0006): deleting a stream deletes its events, and nothing else's.
    @Test func aDeletedStreamLeavesNoEventRows() async throws {
        try await TestPostgres.withDatabase { url in
            let store = try EventStore(location: url, options: .init(autoCreate: .unlimited))
            defer { store.close() }
            for stream in ["gone", "kept"] {
                for index in 0..<3 { _ = try await store.append(Data("\(stream) \(index)".utf8), to: stream) }
            }
            let gone = try await TestPostgres.psql(url, "SELECT id FROM streams WHERE name = 'gone'")
            try await store.delete("gone")
            #expect(try await TestPostgres.psql(url, "SELECT count(*) FROM event_log WHERE stream_id = \(gone)") == "0")
            #expect(try await TestPostgres.psql(url, "SELECT count(*) FROM events WHERE stream = 'kept'") == "3")
        }
    }

    /// Transactions of this database's replayd sessions open with nothing running in them.
    static let openTransactions = """
        SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'replayd'
        AND state LIKE 'idle in transaction%'
        """

    /// Appends `count` events of "x", each submitted from the completion of the one before;
    /// the last one's sequence number.
    static func appendsInTurn(_ count: Int, to stream: String, _ store: EventStore) async throws -> UInt64 {
        try await withCheckedThrowingContinuation { done in
            @Sendable func append(_ left: Int) {
                store.append(Data("x".utf8), to: stream) { result in
                    switch result {
                    case .success(let event) where left == 1: done.resume(returning: event.sequence)
                    case .success: append(left - 1)
                    case .failure(let error): done.resume(throwing: error)
                    }
                }
            }
            append(count)
        }
    }

    /// Appends `count` events of "x", submitted from a thread of their own in runs of ten
    /// with a millisecond between runs, so that requests keep arriving while the writer
    /// commits: the results, in the order submitted.
    static func appendsUnderLoad(_ count: Int, to stream: String, _ store: EventStore) async -> [Result<StoredEvent, StoreError>] {
        await withCheckedContinuation { done in
            let results = Locked((slots: [Result<StoredEvent, StoreError>?](repeating: nil, count: count), answered: 0))
            Thread.detachNewThread {
                for index in 0..<count {
                    store.append(Data("x".utf8), to: stream) { result in
                        let all = results.withLock { state -> [Result<StoredEvent, StoreError>]? in
                            state.slots[index] = result
                            state.answered += 1
                            return state.answered == count ? state.slots.map { $0! } : nil
                        }
                        if let all { done.resume(returning: all) }
                    }
                    if index % 10 == 9 { Thread.sleep(forTimeInterval: 0.001) }
                }
            }
        }
    }
}
