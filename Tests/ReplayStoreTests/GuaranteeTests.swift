import Dispatch
import Foundation
import GRDB
import ReplayCore
import ReplayModel
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// Expected sequence, idempotent producers, atomic sends and durable consumers: checks
/// inside the writer's transaction, on a real SQLite file.
@Suite("Guarantees")
struct GuaranteeTests {
    /// Collects the results a sink is told, and lets a test wait for them.
    final class Results: AppendSink, Sendable {
        private let results = Locked<[UInt64: AppendResult]>([:])

        func appended(_ results: [AppendResult]) {
            self.results.withLock { for result in results { $0[result.token] = result } }
        }

        func wait(for count: Int) async throws -> [UInt64: AppendResult] {
            try await eventually("\(count) results") { self.results.withLock { $0.count } >= count }
            return results.withLock { $0 }
        }
    }

    /// Holds the writer's thread in a completion until released, so that the requests
    /// submitted meanwhile are certain to share the next transaction.
    static func holdingTheWriter(_ store: EventStore, _ body: () -> Void) async throws {
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        store.barrier { _ in
            held.signal()
            release.wait()
        }
        await blockingCall { held.wait() }
        body()
        release.signal()
    }

    @Test(arguments: StoreKind.allCases) func ofTwoPublishesInOneBatchExpectingTheSameLastSequenceTheFirstWins(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll(["a", "b"], to: "s")
            let results = Results()
            try await Self.holdingTheWriter(store) {
                for token in UInt64(0)..<3 {
                    store.append(Data("c\(token)".utf8), to: "s", conditions: .init(expectedLastSequence: 2), sink: results, token: token)
                }
            }
            let got = try await results.wait(for: 3)
            #expect(got[0]?.sequence == .success(3))
            for token in UInt64(1)..<3 {
                #expect(got[token]?.sequence == .failure(.wrongLastSequence(stream: "s", last: 3, expected: 2)))
            }
            #expect(try store.texts("s") == ["a", "b", "c0"])
        }
    }

    /// A producer's publish and the deletion of its stream in one batch: the stream goes
    /// with its producers, and the batch's other writes stand. (The producer's row was
    /// written after the deletion, for a stream no longer there, and failed the batch.)
    @Test(arguments: StoreKind.allCases) func aProducersPublishAndItsStreamsDeletionInOneBatchFailNothing(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll(["a"], to: "pay")
            let results = Results()
            let deleted = Locked<Result<Void, StoreError>?>(nil)
            try await Self.holdingTheWriter(store) {
                store.append(
                    Data("p0".utf8), to: "pay", conditions: AppendConditions(producer: ProducerStamp(id: "billing", epoch: 0, sequence: 0)),
                    sink: results, token: 0)
                store.delete("pay") { result in deleted.withLock { $0 = result } }
                store.append(Data("o".utf8), to: "other", conditions: AppendConditions(), sink: results, token: 1)
            }
            let got = try await results.wait(for: 2)
            #expect(got[0]?.sequence == .success(2))
            #expect(got[1]?.sequence == .success(1))
            try await eventually("the deletion's answer") { deleted.withLock { $0 } != nil }
            #expect(deleted.withLock { $0.map { (try? $0.get()) != nil } } == true)
            #expect(store.info("pay") == nil)
            #expect(try store.texts("other") == ["o"])
        }
    }

    @Test(arguments: StoreKind.allCases) func expectingZeroMeansEmptyOrNewAndARefusalCreatesNothing(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            let results = Results()
            store.append(Data("x".utf8), to: "new", conditions: .init(expectedLastSequence: 5), sink: results, token: 0)
            store.append(Data("y".utf8), to: "fresh", conditions: .init(expectedLastSequence: 0), sink: results, token: 1)
            let got = try await results.wait(for: 2)
            #expect(got[0]?.sequence == .failure(.wrongLastSequence(stream: "new", last: 0, expected: 5)))
            #expect(got[1]?.sequence == .success(1))
            #expect(store.info("new") == nil, "a refused publish does not create its stream")
        }
    }

    @Test(arguments: StoreKind.allCases) func aProducersRetryGetsItsOriginalSequenceAcrossARestartAndIsNotStoredAgain(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let stamp = { (pseq: UInt64) in AppendConditions(producer: ProducerStamp(id: "billing", epoch: 1, sequence: pseq)) }
            do {
                let store = try openStore(directory, autoCreate: .unlimited)
                defer { store.close() }
                _ = try await store.appendAll(["other"], to: "pay")
                let results = Results()
                for pseq in UInt64(0)..<3 {
                    store.append(Data("p\(pseq)".utf8), to: "pay", conditions: stamp(pseq), sink: results, token: pseq)
                }
                let got = try await results.wait(for: 3)
                #expect((0..<3).map { got[$0]?.sequence } == [.success(2), .success(3), .success(4)])
            }
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            let results = Results()
            for pseq in UInt64(0)..<4 {
                store.append(Data("p\(pseq)".utf8), to: "pay", conditions: stamp(pseq), sink: results, token: pseq)
            }
            let got = try await results.wait(for: 4)
            #expect((0..<4).map { got[$0]?.sequence } == [.success(2), .success(3), .success(4), .success(5)])
            #expect(try store.texts("pay") == ["other", "p0", "p1", "p2", "p3"])
        }
    }

    @Test(arguments: StoreKind.allCases) func aStaleEpochIsFencedAndAGapIsRefused(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            let results = Results()
            let send = { (token: UInt64, epoch: UInt64, pseq: UInt64) in
                store.append(
                    Data("e\(epoch)p\(pseq)".utf8), to: "s", conditions: .init(producer: .init(id: "w", epoch: epoch, sequence: pseq)), sink: results,
                    token: token)
            }
            send(0, 0, 0)
            send(1, 0, 2)  // pseq 1 skipped
            send(2, 1, 0)  // a new instance
            send(3, 0, 1)  // the old one again
            send(4, 2, 5)  // a new epoch starts at 0
            send(5, 1, 1)
            let got = try await results.wait(for: 6)
            #expect(got[0]?.sequence == .success(1))
            #expect(got[1]?.sequence == .failure(.producerSequenceGap(stream: "s", producer: "w", expected: 1, received: 2)))
            #expect(got[2]?.sequence == .success(2))
            #expect(got[3]?.sequence == .failure(.staleEpoch(stream: "s", producer: "w", epoch: 0, current: 1)))
            #expect(got[4]?.sequence == .failure(.producerSequenceGap(stream: "s", producer: "w", expected: 0, received: 5)))
            #expect(got[5]?.sequence == .success(3))
            #expect(try store.texts("s") == ["e0p0", "e1p0", "e1p1"])
        }
    }

    @Test func producerRunsRememberRecentPseqsAndSurviveTheirPacking() {
        var remembered = ProducerState(first: ProducerStamp(id: "p", epoch: 0, sequence: 0), now: 0)
        var sequence: UInt64 = 10
        for pseq in UInt64(0)..<100 {
            sequence += pseq % 10 == 0 ? 5 : 1  // another publisher interleaves now and then
            remembered.record(ProducerStamp(id: "p", epoch: 0, sequence: pseq), sequence: sequence, now: 0)
        }
        #expect(remembered.runs.count == 10)
        #expect(remembered.sequence(ofPseq: 0) == 15 && remembered.sequence(ofPseq: 99) == sequence)
        for format in [ProducerRunsFormat.triples, .deltas] {
            #expect(format.unpack(format.pack(remembered.runs)) == remembered.runs)
        }
        // The stored layouts: little-endian triples (PostgreSQL's rows, and SQLite's from
        // before schema 0009), and varints after the run before.
        let one: [ProducerState.Run] = [.init(pseq: 1, sequence: 0x0203, count: 4)]
        #expect([UInt8](ProducerRunsFormat.triples.pack(one)) == [1, 0, 0, 0, 0, 0, 0, 0, 3, 2, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0])
        #expect([UInt8](ProducerRunsFormat.deltas.pack(one + [.init(pseq: 5, sequence: 0x0217, count: 1)])) == [1, 0x83, 0x04, 4, 0, 16, 1])
        #expect(ProducerState.judge(remembered, ProducerStamp(id: "p", epoch: 0, sequence: 42), stream: "s") == .duplicate(remembered.sequence(ofPseq: 42)))

        var long = remembered
        for pseq in UInt64(100)..<(ProducerState.rememberedPseqs + 200) {
            long.record(ProducerStamp(id: "p", epoch: 0, sequence: pseq), sequence: sequence + pseq * 2, now: 0)
        }
        #expect(long.runs.count <= ProducerState.maxRuns)
        #expect(
            ProducerState.judge(long, ProducerStamp(id: "p", epoch: 0, sequence: 3), stream: "s") == .duplicate(nil),
            "a retry older than the window is still a duplicate, without its number")
    }

    /// A migrated database in a temporary folder, a writer's producer cache, and the key of
    /// producer "billing" of stream 1.
    static func withProducerTable(_ body: (DatabaseQueue, ProducerTable, ProducerKey) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let queue = try DatabaseQueue(path: directory + "/replay.sqlite")
            try Migrations.migrator().migrate(queue)
            try await body(queue, ProducerTable(), ProducerKey(stream: 1, producer: "billing"))
        }
    }

    /// A producer row the writer's cache holds is updated in place; one that went behind the
    /// cache's back (as expiry deletes rows in the transaction that may write them again)
    /// is written again, not lost to an update of nothing. (The writes are forced with
    /// `publishedWithoutEvent`, as for a publish that stored no event: otherwise a known
    /// producer's row waits behind its stamps.)
    @Test func aProducerRowGoneBehindTheCacheIsWrittenAgain() async throws {
        try await Self.withProducerTable { queue, table, key in
            var first = ProducerState(first: ProducerStamp(id: "billing", epoch: 2, sequence: 0), now: 5)
            first.record(ProducerStamp(id: "billing", epoch: 2, sequence: 0), sequence: 7, now: 5)
            var second = first
            second.record(ProducerStamp(id: "billing", epoch: 2, sequence: 1), sequence: 8, now: 6)
            let (known, updated, rewritten) = try await queue.write { [first, second] db in
                try db.execute(sql: "INSERT INTO streams (id, name, created_at, first_seq, last_seq) VALUES (1, 's', '2026-01-01T00:00:00.000Z', 1, 7)")
                var pending = ProducerTable.Pending()
                try table.write([key: first], millis: 5, &pending, db)
                table.apply([key: first], pending, millis: 5)
                pending = ProducerTable.Pending()
                let known = try table.state(key, &pending, db)
                table.publishedWithoutEvent(key, &pending)
                try table.write([key: second], millis: 6, &pending, db)  // in place
                let updated = try Int64.fetchOne(db, sql: "SELECT last_pseq FROM producers")
                try db.execute(sql: "DELETE FROM producers")
                try table.write([key: second], millis: 6, &pending, db)  // gone: written again
                let row = try Row.fetchOne(db, sql: "SELECT last_pseq, runs FROM producers")
                return (known, updated, row.map { ($0["last_pseq"] as Int64, ProducerRunsFormat.deltas.unpack($0["runs"])) })
            }
            #expect(known == first)
            #expect(updated == 1)
            #expect(rewritten?.0 == 1)
            #expect(rewritten?.1 == second.runs)
        }
    }

    /// The cache lends a state to the transaction that asked for it (so that its runs are
    /// changed in place, not copied): the commit gives it back, and after a transaction that
    /// failed, the state is read again from its row, as the failed transaction left it.
    @Test func aStateLentToAFailedTransactionIsReadAgainFromItsRow() async throws {
        try await Self.withProducerTable { queue, table, key in
            let (zero, one) = (ProducerStamp(id: "billing", epoch: 0, sequence: 0), ProducerStamp(id: "billing", epoch: 0, sequence: 1))
            var first = ProducerState(first: zero, now: 5)
            first.record(zero, sequence: 1, now: 5)
            let (unknown, committed, retried) = try await queue.write { [first] db in
                try db.execute(sql: "INSERT INTO streams (id, name, created_at, first_seq, last_seq) VALUES (1, 's', '2026-01-01T00:00:00.000Z', 1, 1)")
                var pending = ProducerTable.Pending()
                let unknown = try table.state(key, &pending, db)
                try table.write([key: first], millis: 5, &pending, db)
                table.apply([key: first], pending, millis: 5)
                // A transaction takes the state and changes it, then fails: nothing applied.
                var failed = ProducerTable.Pending()
                var taken = try table.state(key, &failed, db)
                taken?.record(one, sequence: 2, now: 6)
                // The next one finds the row as the last commit wrote it.
                var next = ProducerTable.Pending()
                let retried = try table.state(key, &next, db)
                return (unknown, first, retried)
            }
            #expect(unknown == nil)
            #expect(retried == committed, "the failed transaction's change is not kept")
            #expect(retried?.lastPseq == 0)
        }
    }

    /// Deltas wrap, so runs out of order (which `record` never makes) still round-trip; a
    /// row cut short loses only its last, partial run.
    @Test func deltaRunsRoundTripInAnyOrderAndACutRowKeepsItsWholeRuns() {
        let runs: [ProducerState.Run] = [
            .init(pseq: 10, sequence: 100, count: 1), .init(pseq: 2, sequence: .max, count: 3), .init(pseq: .max, sequence: 0, count: 0),
        ]
        let packed = ProducerRunsFormat.deltas.pack(runs)
        #expect(ProducerRunsFormat.deltas.unpack(packed) == runs)
        #expect(ProducerRunsFormat.deltas.unpack(packed.dropLast()) == Array(runs.prefix(2)))
        #expect(ProducerRunsFormat.deltas.unpack(Data()) == [])
        #expect(ProducerRunsFormat.deltas.unpack(Data(repeating: 0xFF, count: 40)) == [], "a varint longer than 64 bits is not a run")
        #expect(ProducerRunsFormat.triples.unpack(ProducerRunsFormat.triples.pack(runs).dropLast()) == Array(runs.prefix(2)))
    }

    @Test(arguments: StoreKind.allCases) func anAtomicSendAcrossTwoStreamsWithOneFailingCheckStoresNothingInEither(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            _ = try await store.appendAll(["a1"], to: "a")
            _ = try await store.appendAll(["b1", "b2"], to: "b")
            let results = Results()
            store.appendAtomically(
                [
                    AtomicAppend(stream: "a", payload: Data("a2".utf8), expectedLastSequence: 1),
                    AtomicAppend(stream: "c", payload: Data("c1".utf8)),  // a stream the send would create
                    AtomicAppend(stream: "b", payload: Data("b3".utf8), expectedLastSequence: 1),  // wrong: b is at 2
                ], sink: results, token: 0)
            store.appendAtomically(
                [
                    AtomicAppend(stream: "a", payload: Data("a2".utf8), expectedLastSequence: 1),
                    AtomicAppend(stream: "b", payload: Data("b3".utf8), expectedLastSequence: 2),
                    AtomicAppend(stream: "a", payload: Data("a3".utf8)),
                ], sink: results, token: 1)
            let got = try await results.wait(for: 2)
            #expect(got[0]?.sequence == .failure(.wrongLastSequence(stream: "b", last: 2, expected: 1)))
            #expect(got[1]?.sequence == .success(2) && got[1]?.more == [3, 3])
            #expect(try store.texts("a") == ["a1", "a2", "a3"])
            #expect(try store.texts("b") == ["b1", "b2", "b3"])
            #expect(store.info("c") == nil, "the failed send's new stream was rolled back too")
        }
    }

    @Test(arguments: StoreKind.allCases) func aDurableConsumerKeepsItsPositionAcrossARestartAndRefusesBadAcks(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            do {
                let store = try openStore(directory, autoCreate: .unlimited)
                defer { store.close() }
                _ = try await store.appendAll(["1", "2", "3", "4"], to: "s")
                let start = try await withCheckedThrowingContinuation { continuation in
                    store.openConsumer("mailer", of: "s", initialNext: { $0.firstSequence }) { continuation.resume(with: $0) }
                }
                #expect(start == ConsumerStart(ackedSequence: 0, lastSequence: 4))
                let ack = { (sequence: UInt64) in
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                        store.acknowledge(sequence, consumer: "mailer", of: "s") { continuation.resume(with: $0.mapError { $0 }) }
                    }
                }
                try await ack(2)
                await #expect(
                    throws: StoreError.invalidAck("consumer 'mailer' already acknowledged up to 2; acknowledgements are cumulative and never go back")
                ) { try await ack(1) }
                await #expect(throws: StoreError.invalidAck("9 is beyond the last sequence number of 's', 4")) { try await ack(9) }
                await #expect(throws: StoreError.unknownConsumer(stream: "s", name: "other")) {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                        store.acknowledge(1, consumer: "other", of: "s") { continuation.resume(with: $0.mapError { $0 }) }
                    }
                }
                #expect(store.consumers(of: "s")?.map(\.ackedSequence) == [2])
            }
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            #expect(store.consumers(of: "s")?.map(\.name) == ["mailer"])
            let resumed = try await withCheckedThrowingContinuation { continuation in
                store.openConsumer("mailer", of: "s", initialNext: { $0.lastSequence + 1 }) { continuation.resume(with: $0) }
            }
            #expect(resumed == ConsumerStart(ackedSequence: 2, lastSequence: 4), "the acknowledged position, not the first-use start")
            try await store.delete("s")
            #expect(try await scalar(store, "SELECT count(*) FROM consumers") == 0)
        }
    }
}

extension GuaranteeTests {
    /// One batch of many events of every kind, as the writer groups them: each is stored
    /// exactly as given (a SQLite batch writes its events 32 rows to a statement, and
    /// anything else the batch runs sees the rows before it), a failed atomic send leaves
    /// none of its events, a producer's retry in the same batch is recognised, and the
    /// chains verify.
    @Test(arguments: StoreKind.allCases) func aBatchOfEveryKindOfEventStoresEachAsGiven(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { directory in
            let store = try openStore(directory, autoCreate: .unlimited)
            defer { store.close() }
            let results = Results()
            let trace = TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!
            let producer = AppendConditions(producer: ProducerStamp(id: "billing", epoch: 0, sequence: 0))
            var expectedA: [String] = []
            try await Self.holdingTheWriter(store) {
                for index in 0..<40 {
                    store.append(Data("a\(index)".utf8), to: "a", conditions: .none, sink: results, token: UInt64(index))
                    expectedA.append("a\(index)")
                }
                store.append(Data("traced".utf8), to: "a", conditions: AppendConditions(traceParent: trace), sink: results, token: 40)
                store.append(Data("stamped".utf8), to: "a", conditions: producer, sink: results, token: 41)
                store.append(Data("stamped".utf8), to: "a", conditions: producer, sink: results, token: 42)
                store.appendAtomically(
                    [AtomicAppend(stream: "b", payload: Data("b-in".utf8)), AtomicAppend(stream: "a", payload: Data("never".utf8), expectedLastSequence: 1)],
                    sink: results, token: 43)
                for index in 44..<75 {
                    store.append(Data(repeating: UInt8(index), count: index * 100), to: "b", conditions: .none, sink: results, token: UInt64(index))
                }
            }
            let got = try await results.wait(for: 75)
            expectedA += ["traced", "stamped"]
            #expect(try store.texts("a") == expectedA)
            #expect(got[41]?.sequence == .success(42) && got[42]?.sequence == .success(42), "the retry is the same event")
            #expect(try store.read("a", from: 41, limit: 1).first?.traceParent == trace)
            #expect((try? got[43]?.sequence.get()) == nil, "the atomic send failed whole")
            let b = try store.read("b", from: 1, limit: 100)
            #expect(b.map(\.payload) == (44..<75).map { Data(repeating: UInt8($0), count: $0 * 100) }, "b-in went with its send")
            for stream in ["a", "b"] {
                let report = try store.verify(stream)
                #expect(report.isIntact && report.events == (stream == "a" ? 42 : 31), "\(report)")
            }
        }
    }
}
