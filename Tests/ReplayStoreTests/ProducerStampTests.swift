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
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

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

    /// What a SIGKILL would leave of the store in `directory` (open, and idle).
    static func crashImage(of directory: String, in copy: String) throws {
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: directory + "/replay.sqlite" + suffix, toPath: copy + "/replay.sqlite" + suffix)
        }
    }

    @Test func aKnownProducersRowWaitsBehindItsStampsAndARetryAfterACrashGetsItsOriginalSequence() async throws {
        try await withTemporaryDirectory { directory in
            try await withTemporaryDirectory { crashed in
                let now = Locked(Self.start)
                let store = try openStore(directory, autoCreate: .unlimited, clock: { now.withLock { $0 } })
                defer { store.close() }
                _ = try await store.appendAll(["other"], to: "pay")
                #expect(try await Self.publish(store, 0) == .success(2))
                #expect(try Self.rowsLastPseq(store) == 0, "a producer's first publish writes its row at once")
                #expect(try await Self.publish(store, 1) == .success(3))
                #expect(try await Self.publish(store, 2) == .success(4))
                #expect(try Self.rowsLastPseq(store) == 0, "a known producer's row waits behind its stamps")
                #expect(try store.query { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM event_log WHERE stamp IS NOT NULL") } == 3)
                try Self.crashImage(of: directory, in: crashed)

                now.withLock { $0 += 1 }
                #expect(try await Self.publish(store, 3) == .success(5))
                #expect(try Self.rowsLastPseq(store) == 3, "a row behind for a second is written with the next batch")

                let restarted = try openStore(crashed, autoCreate: .unlimited, clock: { now.withLock { $0 } })
                defer { restarted.close() }
                #expect(try await Self.publish(restarted, 1) == .success(3), "a retry is answered with its original sequence")
                #expect(try await Self.publish(restarted, 2) == .success(4))
                #expect(try await Self.publish(restarted, 4) == .failure(.producerSequenceGap(stream: "pay", producer: "billing", expected: 3, received: 4)))
                #expect(try await Self.publish(restarted, 3) == .success(5))
                #expect(try restarted.texts("pay") == ["other", "p0", "p1", "p2", "p3"])
            }
        }
    }

    /// After a start, any of a stream's rows may be behind the log, not only those this
    /// process changed: the first time it writes the stream's rows (here for a new
    /// producer), it reads every one of them back first, so that the snapshot does not move
    /// past another producer's stamps.
    @Test func theFirstWriteOfAStreamsRowsAfterACrashTakesInTheRowsBehind() async throws {
        try await withTemporaryDirectory { directory in
            try await withTemporaryDirectory { first in
                try await withTemporaryDirectory { second in
                    let now = Locked(Self.start)
                    let clock: @Sendable () -> Date = { now.withLock { $0 } }
                    do {
                        let store = try openStore(directory, autoCreate: .unlimited, clock: clock)
                        defer { store.close() }
                        for pseq in UInt64(0)..<3 { #expect(try await Self.publish(store, pseq) == .success(pseq + 1)) }
                        try Self.crashImage(of: directory, in: first)
                    }
                    let restarted = try openStore(first, autoCreate: .unlimited, clock: clock)
                    defer { restarted.close() }
                    #expect(try Self.rowsLastPseq(restarted) == 0)
                    #expect(try await Self.publish(restarted, 0, as: "refunds") == .success(4))
                    #expect(try Self.rowsLastPseq(restarted) == 2, "written with the new producer's row")
                    try Self.crashImage(of: first, in: second)

                    let again = try openStore(second, autoCreate: .unlimited, clock: clock)
                    defer { again.close() }
                    #expect(try await Self.publish(again, 2) == .success(3))
                    #expect(try await Self.publish(again, 3) == .success(5))
                }
            }
        }
    }

    /// Stamps past the stream's snapshot are a producer's only record of those publishes:
    /// a trim that would remove them writes the rows first, in the same batch.
    @Test func aTrimPastTheSnapshotWritesTheRowsFirst() async throws {
        try await withTemporaryDirectory { directory in
            try await withTemporaryDirectory { crashed in
                let now = Locked(Self.start)
                let store = try openStore(directory, autoCreate: StreamConfig(capacity: 2), clock: { now.withLock { $0 } })
                defer { store.close() }
                #expect(try await Self.publish(store, 0) == .success(1))
                #expect(try await Self.publish(store, 1) == .success(2))
                #expect(try await Self.publish(store, 2) == .success(3))  // trims seq 1, the snapshot's own event
                #expect(try Self.rowsLastPseq(store) == 0)
                #expect(try await Self.publish(store, 3) == .success(4))  // trims seq 2, pseq 1's stamp
                #expect(try Self.rowsLastPseq(store) == 3)
                try Self.crashImage(of: directory, in: crashed)

                let restarted = try openStore(crashed, autoCreate: StreamConfig(capacity: 2), clock: { now.withLock { $0 } })
                defer { restarted.close() }
                #expect(try await Self.publish(restarted, 1) == .success(2), "its stamp is gone, its row remembers it")
                #expect(try await Self.publish(restarted, 3) == .success(4))
                #expect(try await Self.publish(restarted, 4) == .success(5))
            }
        }
    }

    /// Expiry forgets producers idle for a week, by their state rather than their row: a
    /// row behind the log looks idle when its producer published a moment ago. Here the
    /// row was last written a week before a publish that only its stamp records, and the
    /// first retention pass after a crash keeps that producer and forgets the idle one.
    @Test func expiryJudgesARowBehindTheLogByItsStamps() async throws {
        try await withTemporaryDirectory { directory in
            try await withTemporaryDirectory { crashed in
                let now = Locked(Self.start)
                let clock: @Sendable () -> Date = { now.withLock { $0 } }
                do {
                    let store = try openStore(directory, autoCreate: .unlimited, clock: clock)
                    defer { store.close() }
                    #expect(try await Self.publish(store, 0) == .success(1))
                    #expect(try await Self.publish(store, 0, as: "idle") == .success(2))
                    now.withLock { $0 += 8 * 86_400 }
                    #expect(try await Self.publish(store, 1) == .success(3))
                    try Self.crashImage(of: directory, in: crashed)
                }
                let restarted = try openStore(crashed, autoCreate: .unlimited, clock: clock)
                defer { restarted.close() }
                try await restarted.enforceRetention()
                #expect(try Self.rowsLastPseq(restarted) == 1, "kept, and written")
                #expect(try Self.rowsLastPseq(restarted, of: "idle") == nil, "forgotten")
                #expect(try await Self.publish(restarted, 1) == .success(3), "still known: a retry")
                #expect(try await Self.publish(restarted, 0, as: "idle") == .success(4), "new again: stored")
            }
        }
    }

    /// A clean close writes every row that is behind: the next start reads no stamps back.
    @Test func aCleanCloseWritesTheRowsBehind() async throws {
        try await withTemporaryDirectory { directory in
            let now = Locked(Self.start)
            do {
                let store = try openStore(directory, autoCreate: .unlimited, clock: { now.withLock { $0 } })
                defer { store.close() }
                for pseq in UInt64(0)..<3 { _ = try await Self.publish(store, pseq) }
                #expect(try Self.rowsLastPseq(store) == 0)
            }
            let queue = try DatabaseQueue(path: directory + "/replay.sqlite")
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
        try await withTemporaryDirectory { directory in
            try await withTemporaryDirectory { crashed in
                let now = Locked(Self.start)
                let store = try openStore(directory, autoCreate: .unlimited, clock: { now.withLock { $0 } })
                defer { store.close() }
                #expect(try await Self.publish(store, 0) == .success(1))
                #expect(try await Self.publish(store, 1) == .success(2))
                let stamp = ProducerStamp(id: "billing", epoch: 1, sequence: 2)
                let closed = try await store.write(StreamWrite(stream: "pay", payloads: [], producer: stamp, close: true))
                guard case .appended(let info) = closed else { Issue.record("\(closed)"); return }
                #expect(info.terminal != nil)
                #expect(try Self.rowsLastPseq(store) == 2)
                try Self.crashImage(of: directory, in: crashed)
                let restarted = try openStore(crashed, autoCreate: .unlimited, clock: { now.withLock { $0 } })
                defer { restarted.close() }
                let again = try await restarted.write(StreamWrite(stream: "pay", payloads: [], producer: stamp, close: true))
                guard case .duplicate = again else { Issue.record("\(again)"); return }
            }
        }
    }
}
