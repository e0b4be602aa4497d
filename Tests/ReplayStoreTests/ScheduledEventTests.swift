import Foundation
import ReplayModel
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayStore

/// Scheduled events on virtual time: the store's clock is moved by hand and the drain is
/// asked for (`appendDueEvents`), as the alarm asks at each due time.
@Suite("Scheduled events")
struct ScheduledEventTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let startMillis = Timestamp.millis(start)

    @Test(arguments: StoreKind.allCases) func anEventIsAppendedOnceWhenItFallsDueInDueOrder(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let now = Locked(Self.start)
            let store = try openStore(location, clock: { now.value })
            defer { store.close() }
            _ = try await store.create("jobs", config: StreamConfig(capacity: nil))
            let late = try await store.schedule(Data("late".utf8), to: "jobs", at: .at(millis: Self.startMillis + 30_000))
            let first = try await store.schedule(Data("first".utf8), to: "jobs", at: .at(millis: Self.startMillis + 10_000), key: EventKey("job-1"))
            _ = try await store.schedule(Data("second".utf8), to: "jobs", at: .at(millis: Self.startMillis + 10_000))
            #expect(first.id > late.id, "ids follow scheduling, not due time")
            #expect(store.info("jobs").map { [$0.scheduledCount, Int($0.nextDue ?? 0)] } == [3, Int(Self.startMillis + 10_000)])
            #expect(try store.scheduled("jobs", limit: 10).map { String(decoding: $0.payload, as: UTF8.self) } == ["first", "second", "late"])
            #expect(try await scalar(store, "SELECT count(*) FROM scheduled WHERE stream = 'jobs' AND key = 'job-1' AND due LIKE '%T%Z'") == 1, "the view")

            now.withLock { $0 += 9.999 }
            try await store.appendDueEvents()
            #expect(store.info("jobs")?.lastSequence == 0, "nothing is appended before its time")

            now.withLock { $0 += 0.001 }
            try await store.appendDueEvents()
            let appended = try store.read("jobs", from: 1)
            #expect(appended.map { String(decoding: $0.payload, as: UTF8.self) } == ["first", "second"])
            #expect(appended.first?.key == EventKey("job-1"), "the key travels with it")
            #expect(appended.allSatisfy { $0.timestamp == Timestamp.format(millis: Self.startMillis + 10_000) }, "stamped when appended")
            #expect(store.info("jobs").map { [$0.scheduledCount, Int($0.nextDue ?? 0)] } == [1, Int(Self.startMillis + 30_000)])

            now.withLock { $0 += 60 }
            try await store.appendDueEvents()
            try await store.appendDueEvents()
            #expect(try store.texts("jobs") == ["first", "second", "late"], "each once, however often the drain runs")
            #expect(store.info("jobs").map { [$0.scheduledCount, Int($0.nextDue ?? 0)] } == [0, 0], "none pending, none due")
        }
    }

    @Test(arguments: StoreKind.allCases) func pendingEventsSurviveARestartAndWhatFellDueMeanwhileIsAppendedAtStart(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let now = Locked(Self.start)
            do {
                let store = try openStore(location, clock: { now.value })
                defer { store.close() }
                _ = try await store.create("jobs", config: StreamConfig(capacity: nil))
                for index in 0..<5 {
                    _ = try await store.schedule(Data("job \(index)".utf8), to: "jobs", at: .at(millis: Self.startMillis + Int64(index) * 1_000))
                }
                try await store.appendDueEvents()
                #expect(try store.texts("jobs") == ["job 0"])
            }
            now.withLock { $0 += 2.5 }
            let store = try openStore(location, clock: { now.value })
            defer { store.close() }
            // The start's own drain is queued first: a barrier behind it sees its appends.
            try await store.barrier()
            #expect(try store.texts("jobs") == ["job 0", "job 1", "job 2"])
            #expect(store.info("jobs")?.scheduledCount == 2)
            now.withLock { $0 += 10 }
            try await store.appendDueEvents()
            #expect(try store.texts("jobs") == (0..<5).map { "job \($0)" })
        }
    }

    @Test(arguments: StoreKind.allCases) func cancellingRefusalsAndStreamsThatChangedBeforeTheTime(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let now = Locked(Self.start)
            let store = try openStore(location, clock: { now.value })
            defer { store.close() }
            _ = try await store.create("jobs", config: StreamConfig(capacity: nil))
            _ = try await store.create("other", config: StreamConfig(capacity: nil))
            let cancelled = try await store.schedule(Data("cancelled".utf8), to: "jobs", at: .at(millis: Self.startMillis + 1_000))
            _ = try await store.schedule(Data("kept".utf8), to: "jobs", at: .at(millis: Self.startMillis + 1_000))
            await #expect(throws: StoreError.unknownScheduled(stream: "other", id: cancelled.id), "an id of another stream is not this one's") {
                try await store.unschedule(cancelled.id, of: "other")
            }
            try await store.unschedule(cancelled.id, of: "jobs")
            #expect(store.info("jobs")?.scheduledCount == 1)
            await #expect(throws: StoreError.unknownScheduled(stream: "jobs", id: cancelled.id)) {
                try await store.unschedule(cancelled.id, of: "jobs")
            }
            await #expect(throws: StoreError.unknownStream("nowhere")) {
                try await store.schedule(Data("x".utf8), to: "nowhere", at: .at(millis: Self.startMillis))
            }

            // A stream that ends before its event's time drops it, and one deleted takes its
            // pending events with it.
            _ = try await store.schedule(Data("after the end".utf8), to: "other", at: .at(millis: Self.startMillis + 1_000))
            _ = try await store.create("gone", config: StreamConfig(capacity: nil))
            _ = try await store.schedule(Data("never".utf8), to: "gone", at: .at(millis: Self.startMillis + 1_000))
            try await store.delete("gone")
            try await store.terminate("other", .completed)
            await #expect(throws: StoreError.terminated(stream: "other"), "an ended stream takes no new ones") {
                try await store.schedule(Data("x".utf8), to: "other", at: .at(millis: Self.startMillis))
            }
            now.withLock { $0 += 5 }
            try await store.appendDueEvents()
            #expect(try store.texts("jobs") == ["kept"])
            #expect(try store.texts("other") == [])
            #expect(store.info("other").map { [$0.scheduledCount, Int($0.nextDue ?? 0)] } == [0, 0], "a dropped event is no longer pending")
            #expect(try await scalar(store, "SELECT count(*) FROM scheduled_events") == 0)
        }
    }

    /// Two stores on one PostgreSQL database drain the same due events at once, again and
    /// again: each event is appended once.
    @Test func twoDaemonsOnOneDatabaseAppendEachDueEventOnce() async throws {
        try await TestPostgres.withDatabase { url in
            let now = Locked(Self.start)
            let first = try openStore(url, clock: { now.value })
            let second = try openStore(url, clock: { now.value })
            defer {
                first.close()
                second.close()
            }
            for stream in ["a", "b"] { _ = try await first.create(stream, config: StreamConfig(capacity: nil)) }
            let count = 600
            // Scheduled by both, concurrently: batches of many.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<count {
                    let store = index.isMultiple(of: 2) ? first : second
                    group.addTask {
                        _ = try await store.schedule(
                            Data("\(index)".utf8), to: index.isMultiple(of: 3) ? "a" : "b", at: .at(millis: Self.startMillis + Int64(index % 7)))
                    }
                }
                try await group.waitForAll()
            }
            now.withLock { $0 += 1 }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await first.appendDueEvents() }
                    group.addTask { try await second.appendDueEvents() }
                }
                try await group.waitForAll()
            }
            let payloads = try first.texts("a") + first.texts("b")
            #expect(payloads.count == count)
            #expect(Set(payloads) == Set((0..<count).map { "\($0)" }))
            #expect(try await scalar(first, "SELECT count(*) FROM scheduled_events") == 0)
        }
    }
}

/// Scheduled sources' ticks: a claim only moves forward, once per tick.
@Suite("Source ticks")
struct SourceTickTests {
    @Test(arguments: StoreKind.allCases) func aTickIsClaimedOnceAndClaimsOnlyMoveForward(_ kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.create("ticks", config: StreamConfig(capacity: nil))
            #expect(try store.lastSourceTick(of: "ticks") == nil)
            var answers: [Bool] = []
            for tick: Int64 in [100, 100, 50, 200] { answers.append(try await Self.claim(store, tick)) }
            #expect(answers == [true, false, false, true])
            #expect(try store.lastSourceTick(of: "ticks") == 200)
        }
    }

    /// Two stores on one PostgreSQL database claim the same ticks at once: one gets each.
    @Test func twoDaemonsClaimEachTickOnce() async throws {
        try await TestPostgres.withDatabase { url in
            let (first, second) = (try openStore(url), try openStore(url))
            defer {
                first.close()
                second.close()
            }
            _ = try await first.create("ticks", config: StreamConfig(capacity: nil))
            for tick: Int64 in 1...20 {
                async let one = Self.claim(first, tick * 60_000)
                async let other = Self.claim(second, tick * 60_000)
                let won = try await [one, other]
                #expect(won.filter { $0 }.count == 1, "tick \(tick): \(won)")
            }
        }
    }

    static func claim(_ store: EventStore, _ tick: Int64) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            store.claimSourceTick("ticks", tick: tick) { continuation.resume(with: $0) }
        }
    }
}
