import Foundation
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// A group member's hand-out that finds nothing waits at the writer and is answered by the
/// commit that makes work for it: new events, an ACK that frees room, a held event's time
/// running out, the stream's end. On both databases.
@Suite("Waiting group members")
struct WaitingMembersTests {
    /// A member's answers, in order.
    final class Member: Sendable {
        let name: String
        let answers: AsyncStream<Result<GroupHandout, StoreError>>
        private let sink: AsyncStream<Result<GroupHandout, StoreError>>.Continuation
        let count = Locked(0)

        init(_ name: String) {
            self.name = name
            (answers, sink) = AsyncStream.makeStream()
        }

        /// Asks for up to `limit` events, waiting with `ticket` if there are none.
        func ask(_ store: EventStore, limit: Int = 2, ticket: WaitTicket) {
            store.group(
                .handOut(group: "g", member: name, limit: limit, deadLetterConfig: .unlimited, wait: ticket) { [sink, count] in
                    count.withLock { $0 += 1 }
                    sink.yield($0)
                }, of: "jobs")
        }
    }

    /// A store with the stream `jobs` and its group `g`, created.
    func withJobs(_ kind: StoreKind, ackWaitMillis: Int64 = 3_600_000, _ body: (EventStore) async throws -> Void) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.create("jobs", config: .unlimited)
            try await join(store, ackWaitMillis: ackWaitMillis)
            try await body(store)
        }
    }

    func join(_ store: EventStore, ackWaitMillis: Int64) async throws {
        let joined = await withCheckedContinuation { continuation in
            store.group(
                .join(group: "g", asked: GroupSettings.Asked(ackWaitMillis: ackWaitMillis), first: .next { _ in 1 }) {
                    continuation.resume(returning: $0)
                }, of: "jobs")
        }
        #expect(try joined.get().created)
    }

    func acknowledge(_ store: EventStore, _ sequence: UInt64, by member: String) async throws {
        try await withCheckedContinuation { continuation in
            store.group(
                .acknowledge(group: "g", member: member, sequences: [sequence]) { continuation.resume(returning: $0.flatMap { $0[0] }) },
                of: "jobs")
        }.get()
    }

    /// Every answer of every batch committed so far has been given: two barriers, as the
    /// first may share its batch with the request whose answer is wanted.
    func settled(_ store: EventStore) async throws {
        try await store.barrier()
        try await store.barrier()
    }

    @Test(arguments: StoreKind.allCases)
    func aWaitingMemberIsAnsweredByTheCommitThatMakesItsWork(kind: StoreKind) async throws {
        try await withJobs(kind) { store in
            let member = Member("a")
            var answers = member.answers.makeAsyncIterator()

            // Nothing to hand out: the request waits.
            member.ask(store, ticket: WaitTicket())
            try await settled(store)
            #expect(member.count.value == 0)

            // The append's commit hands the event out and answers.
            _ = try await store.appendAll(["e1"], to: "jobs")
            let first = try #require(await answers.next()).get()
            #expect(first.given.map(\.sequence) == [1])
            #expect(store.groups(of: "jobs")?["g"]?.pending[1]?.member == "a", "remembered in the commit that answered")

            // At its limit (2), a member waits for room: the ACK that frees it answers.
            _ = try await store.appendAll(["e2", "e3"], to: "jobs")
            member.ask(store, ticket: WaitTicket())
            #expect(try #require(await answers.next()).get().given.map(\.sequence) == [2])
            member.ask(store, ticket: WaitTicket())
            try await settled(store)
            #expect(member.count.value == 2, "holds 1 and 2, its limit")
            try await acknowledge(store, 1, by: "a")
            #expect(try #require(await answers.next()).get().given.map(\.sequence) == [3])

            // The stream's end answers a waiting member once the group's work is done.
            member.ask(store, ticket: WaitTicket())
            try await store.terminate("jobs", .completed)
            try await acknowledge(store, 2, by: "a")
            try await settled(store)
            #expect(member.count.value == 3, "event 3 is still held")
            try await acknowledge(store, 3, by: "a")
            let last = try #require(await answers.next()).get()
            #expect(last.given.isEmpty && last.finished)
        }
    }

    /// Several ACKs of one member in one request are decided one by one: a refused one
    /// (not pending, or held by another) changes nothing, and the others count.
    @Test(arguments: StoreKind.allCases)
    func acknowledgementsTogetherAreDecidedOneByOne(kind: StoreKind) async throws {
        try await withJobs(kind) { store in
            _ = try await store.appendAll(["e1", "e2", "e3"], to: "jobs")
            for (name, limit) in [("a", 2), ("b", 1)] {
                let member = Member(name)
                var answers = member.answers.makeAsyncIterator()
                member.ask(store, limit: limit, ticket: WaitTicket())
                _ = try #require(await answers.next()).get()
            }
            let results = try await withCheckedContinuation { continuation in
                store.group(.acknowledge(group: "g", member: "a", sequences: [2, 3, 1, 2]) { continuation.resume(returning: $0) }, of: "jobs")
            }.get()
            #expect(results.map { (try? $0.get()) != nil } == [true, false, true, false])
            guard case .failure(.invalidAck(let message)) = results[1] else { throw TestFailure("expected a refusal, got \(results[1])") }
            #expect(message.contains("'b' does"), "3 is held by b: \(message)")
            let pending = try #require(store.groups(of: "jobs")?["g"]?.pending)
            #expect(pending.keys.sorted() == [3] && pending[3]?.member == "b")
        }
    }

    /// With a reader, SQLite's writer reads a hand-out's events for its member, in order, up
    /// to the reader's byte budget (at least one); PostgreSQL's leaves them to the member.
    @Test(arguments: StoreKind.allCases)
    func aHandOutsEventsAreReadByTheWriterForItsMemberUpToABudget(kind: StoreKind) async throws {
        try await withJobs(kind) { store in
            _ = try await store.appendAll(["one", "two", "three", "four"], to: "jobs")
            let taken = Locked<[(UInt64, String, Int?)]>([])
            let reader = HandoutReader(byteBudget: 6) { sequence, _, payload, _, hash, _ in
                taken.withLock { $0.append((sequence, String(decoding: payload, as: UTF8.self), hash?.count)) }
            }
            let handout = try await withCheckedContinuation { continuation in
                store.group(
                    .handOut(group: "g", member: "a", limit: 4, deadLetterConfig: .unlimited, wait: nil, read: reader) {
                        continuation.resume(returning: $0)
                    }, of: "jobs")
            }.get()
            #expect(handout.given.map(\.sequence) == [1, 2, 3, 4])
            switch kind {
            case .sqlite:
                #expect(handout.read == 2, "'one' and 'two' reach the budget of 6 bytes")
                #expect(taken.value.map(\.0) == [1, 2] && taken.value.map(\.1) == ["one", "two"])
                #expect(taken.value.map(\.2) == [32, 32], "each with its hash-chain link")
            case .postgres:
                #expect(handout.read == 0 && taken.value.isEmpty)
            }
        }
    }

    @Test func aMemberThatStopsWaitingIsAnsweredWithNothingEvenBeforeItsRequestArrives() async throws {
        try await withJobs(.sqlite) { store in
            let member = Member("a")
            var answers = member.answers.makeAsyncIterator()

            let waiting = WaitTicket()
            member.ask(store, ticket: waiting)
            store.group(.stopWaiting(waiting), of: "jobs")
            #expect(try #require(await answers.next()).get().given.isEmpty)

            // Cancelled as it asked: the stop reaches the writer first.
            let early = WaitTicket()
            store.group(.stopWaiting(early), of: "jobs")
            member.ask(store, ticket: early)
            #expect(try #require(await answers.next()).get().given.isEmpty)

            // Neither is handed anything later.
            _ = try await store.appendAll(["e1"], to: "jobs")
            try await settled(store)
            #expect(member.count.value == 2)
            #expect(store.groups(of: "jobs")?["g"]?.pending.isEmpty == true)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aHeldEventWhoseTimeRunsOutGoesToAWaitingMemberWithNoOtherCommit(kind: StoreKind) async throws {
        try await withJobs(kind, ackWaitMillis: 200) { store in
            _ = try await store.appendAll(["e1"], to: "jobs")
            let (a, b) = (Member("a"), Member("b"))
            var answersA = a.answers.makeAsyncIterator()
            var answersB = b.answers.makeAsyncIterator()
            a.ask(store, ticket: WaitTicket())
            #expect(try #require(await answersA.next()).get().given.map(\.sequence) == [1])
            // b waits; nothing is committed after this, so only the writer's alarm for the
            // held event's deadline can answer it.
            b.ask(store, ticket: WaitTicket())
            let redelivered = try #require(await answersB.next()).get()
            #expect(redelivered.given.map(\.sequence) == [1])
            #expect(redelivered.given.first?.deliveries == 2)
        }
    }

    @Test func theStoresCloseAnswersEveryWaiter() async throws {
        try await withStoreLocation(.sqlite) { location in
            let store = try openStore(location)
            _ = try await store.create("jobs", config: .unlimited)
            try await join(store, ackWaitMillis: 3_600_000)
            let member = Member("a")
            var answers = member.answers.makeAsyncIterator()
            member.ask(store, ticket: WaitTicket())
            try await settled(store)
            store.close()
            let answer = try #require(await answers.next())
            #expect(throws: StoreError.closed) { try answer.get() }
        }
    }
}
