import Foundation
import GRDB
import ReplayModel
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// Idempotent producers' rows written behind the log (`ProducerTable`): a known producer's
/// publish stamps its event and leaves its row for later, and what a row is missing is read
/// back from the stamps, after a crash as after a failed batch. A crash is a copy of the
/// database and its WAL taken while the store is open and idle: what a kill would leave.
@Suite("Producer stamps")
struct ProducerStampTests {
    /// Stores in one temporary folder on a clock the test moves: `open` a fresh one,
    /// `crash` one into what a SIGKILL would have left of it, opened as another. All are
    /// closed when the test ends.
    final class Stores: Sendable {
        let now = Locked(Date(timeIntervalSince1970: 1_800_000_000))
        private let root: String
        private let autoCreate: StreamConfig
        private let opened = Locked<[EventStore]>([])

        init(root: String, autoCreate: StreamConfig) {
            self.root = root
            self.autoCreate = autoCreate
        }

        func open() throws -> EventStore {
            let directory = root + "/\(opened.withLock { $0.count })"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            return try remember(directory)
        }

        /// Copies `store`'s database and WAL while it is open and idle, and opens the copy.
        func crash(_ store: EventStore) throws -> EventStore {
            let directory = root + "/\(opened.withLock { $0.count })"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            for suffix in ["", "-wal"] {
                try FileManager.default.copyItem(atPath: store.location + suffix, toPath: directory + "/replay.sqlite" + suffix)
            }
            return try remember(directory)
        }

        private func remember(_ directory: String) throws -> EventStore {
            let store = try openStore(directory, autoCreate: autoCreate, clock: { [now] in now.withLock { $0 } })
            opened.withLock { $0.append(store) }
            return store
        }

        func closeAll() {
            for store in opened.withLock({ $0 }) { store.close() }
        }

        static func with(autoCreate: StreamConfig = .unlimited, _ body: (Stores) async throws -> Void) async throws {
            try await withTemporaryDirectory { root in
                let stores = Stores(root: root, autoCreate: autoCreate)
                defer { stores.closeAll() }
                try await body(stores)
            }
        }
    }

    /// A producer (epoch 1) publishing `pseq` to "pay", alone in its batch.
    static func publish(_ store: EventStore, _ pseq: UInt64, as producer: String = "billing") async throws -> Result<UInt64, StoreError> {
        let results = GuaranteeTests.Results()
        store.append(
            Data("p\(pseq)".utf8), to: "pay", conditions: AppendConditions(producer: ProducerStamp(id: producer, epoch: 1, sequence: pseq)),
            sink: results, token: 0)
        return try #require(try await results.wait(for: 1)[0]).sequence
    }

    /// The last pseq in the producer's row, as the file has it.
    static func rowsLastPseq(_ store: EventStore, of producer: String = "billing") throws -> Int64? {
        try store.query { db in try Int64.fetchOne(db, sql: "SELECT last_pseq FROM producers WHERE producer = ?", arguments: [producer]) }
    }

    @Test func aKnownProducersRowWaitsBehindItsStampsAndARetryAfterACrashGetsItsOriginalSequence() async throws {
        try await Stores.with { stores in
            let store = try stores.open()
            _ = try await store.appendAll(["other"], to: "pay")
            #expect(try await Self.publish(store, 0) == .success(2))
            #expect(try Self.rowsLastPseq(store) == 0, "a producer's first publish writes its row at once")
            #expect(try await Self.publish(store, 1) == .success(3))
            #expect(try await Self.publish(store, 2) == .success(4))
            #expect(try Self.rowsLastPseq(store) == 0, "a known producer's row waits behind its stamps")
            #expect(try store.query { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM event_log WHERE stamp IS NOT NULL") } == 3)
            let restarted = try stores.crash(store)

            stores.now.withLock { $0 += 1 }
            #expect(try await Self.publish(store, 3) == .success(5))
            #expect(try Self.rowsLastPseq(store) == 3, "a row behind for a second is written with the next batch")

            #expect(try await Self.publish(restarted, 1) == .success(3), "a retry is answered with its original sequence")
            #expect(try await Self.publish(restarted, 2) == .success(4))
            #expect(try await Self.publish(restarted, 4) == .failure(.producerSequenceGap(stream: "pay", producer: "billing", expected: 3, received: 4)))
            #expect(try await Self.publish(restarted, 3) == .success(5))
            #expect(try restarted.texts("pay") == ["other", "p0", "p1", "p2", "p3"])
        }
    }

    /// After a start, any of a stream's rows may be behind the log, not only those this
    /// process changed: the first time it writes the stream's rows (here for a new
    /// producer), it reads every one of them back first, so that the snapshot does not move
    /// past another producer's stamps.
    @Test func theFirstWriteOfAStreamsRowsAfterACrashTakesInTheRowsBehind() async throws {
        try await Stores.with { stores in
            let store = try stores.open()
            for pseq in UInt64(0)..<3 { #expect(try await Self.publish(store, pseq) == .success(pseq + 1)) }
            let restarted = try stores.crash(store)
            #expect(try Self.rowsLastPseq(restarted) == 0)
            #expect(try await Self.publish(restarted, 0, as: "refunds") == .success(4))
            #expect(try Self.rowsLastPseq(restarted) == 2, "written with the new producer's row")

            let again = try stores.crash(restarted)
            #expect(try await Self.publish(again, 2) == .success(3))
            #expect(try await Self.publish(again, 3) == .success(5))
        }
    }

    /// Stamps past the stream's snapshot are a producer's only record of those publishes:
    /// a trim that would remove them writes the rows first, in the same batch.
    @Test func aTrimPastTheSnapshotWritesTheRowsFirst() async throws {
        try await Stores.with(autoCreate: StreamConfig(capacity: 2)) { stores in
            let store = try stores.open()
            #expect(try await Self.publish(store, 0) == .success(1))
            #expect(try await Self.publish(store, 1) == .success(2))
            #expect(try await Self.publish(store, 2) == .success(3))  // trims seq 1, the snapshot's own event
            #expect(try Self.rowsLastPseq(store) == 0)
            #expect(try await Self.publish(store, 3) == .success(4))  // trims seq 2, pseq 1's stamp
            #expect(try Self.rowsLastPseq(store) == 3)

            let restarted = try stores.crash(store)
            #expect(try await Self.publish(restarted, 1) == .success(2), "its stamp is gone, its row remembers it")
            #expect(try await Self.publish(restarted, 3) == .success(4))
            #expect(try await Self.publish(restarted, 4) == .success(5))
        }
    }

    /// Expiry forgets producers idle for a week, by their state rather than their row: a
    /// row behind the log looks idle when its producer published a moment ago. Here the
    /// row was last written a week before a publish that only its stamp records, and the
    /// first retention pass after a crash keeps that producer and forgets the idle one.
    @Test func expiryJudgesARowBehindTheLogByItsStamps() async throws {
        try await Stores.with { stores in
            let store = try stores.open()
            #expect(try await Self.publish(store, 0) == .success(1))
            #expect(try await Self.publish(store, 0, as: "idle") == .success(2))
            stores.now.withLock { $0 += 8 * 86_400 }
            #expect(try await Self.publish(store, 1) == .success(3))

            let restarted = try stores.crash(store)
            try await restarted.enforceRetention()
            #expect(try Self.rowsLastPseq(restarted) == 1, "kept, and written")
            #expect(try Self.rowsLastPseq(restarted, of: "idle") == nil, "forgotten")
            #expect(try await Self.publish(restarted, 1) == .success(3), "still known: a retry")
            #expect(try await Self.publish(restarted, 0, as: "idle") == .success(4), "new again: stored")
        }
    }

    /// A clean close writes every row that is behind: the next start reads no stamps back.
    @Test func aCleanCloseWritesTheRowsBehind() async throws {
        try await Stores.with { stores in
            let store = try stores.open()
            for pseq in UInt64(0)..<3 { _ = try await Self.publish(store, pseq) }
            #expect(try Self.rowsLastPseq(store) == 0)
            store.close()
            let queue = try DatabaseQueue(path: store.location)
            defer { try? queue.close() }
            let (last, snapshot) = try await queue.read { db in
                (
                    try Int64.fetchOne(db, sql: "SELECT last_pseq FROM producers"),
                    try Int64.fetchOne(db, sql: "SELECT through_seq FROM producer_snapshots")
                )
            }
            #expect(last == 2)
            #expect(snapshot == 3)
        }
    }

    /// A publish that stores no event (a close with a producer's headers) has nothing to
    /// stamp, so its row is written with it, and a retry after a crash is its duplicate.
    @Test func aCloseByAProducerWritesItsRowAtOnce() async throws {
        try await Stores.with { stores in
            let store = try stores.open()
            #expect(try await Self.publish(store, 0) == .success(1))
            #expect(try await Self.publish(store, 1) == .success(2))
            let stamp = ProducerStamp(id: "billing", epoch: 1, sequence: 2)
            let closed = try await store.write(StreamWrite(stream: "pay", payloads: [], producer: stamp, close: true))
            guard case .appended(let info) = closed else { Issue.record("\(closed)"); return }
            #expect(info.terminal != nil)
            #expect(try Self.rowsLastPseq(store) == 2)

            let restarted = try stores.crash(store)
            let again = try await restarted.write(StreamWrite(stream: "pay", payloads: [], producer: stamp, close: true))
            guard case .duplicate = again else { Issue.record("\(again)"); return }
        }
    }
}
