import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// Scheduled events against the real daemon: due events appended once through a SIGKILL
/// and a restart, and by one of two daemons sharing PostgreSQL.
@Suite("replayd: scheduled events", .timeLimit(.minutes(4)))
struct ScheduledEventsTests {
    /// `count` events scheduled in chunks of 100, chunk `c` due at `first(c)` (ms since
    /// 1970); each payload is `<index> <due ms>`.
    static func schedule(_ count: Int, on client: ReplayClient, from index: Int = 0, due first: (Int) -> Int64) async throws {
        for chunk in stride(from: 0, to: count, by: 100) {
            let due = first(chunk / 100)
            let payloads = (chunk..<min(count, chunk + 100)).map { Data("\(index + $0) \(due)".utf8) }
            _ = try await client.schedule("jobs", contentsOf: payloads, at: .at(millis: due))
        }
    }

    static func nowMillis() -> Int64 { Timestamp.millis(Date()) }

    /// 10,000 events: the first half due over the first seconds; once a thousand of them
    /// are appended, the second half, due seconds after that, then SIGKILL at once. After
    /// the restart every event is in the stream once, each committed at or after its time.
    @Test func tenThousandScheduledEventsThroughASIGKILLAreEachAppendedOnceAtOrAfterTheirTime() async throws {
        try await withTemporaryDirectory { directory in
            var daemon = try await TestDaemon.start(in: directory)
            do {
                let client = try await ReplayClient.connect(to: daemon.socketPath)
                try await client.create("jobs", unlimited: true)
                let start = Self.nowMillis()
                // 50 chunks over 1–3 s.
                try await Self.schedule(5_000, on: client) { start + 1_000 + Int64($0) * 40 }
                let info = try await client.info("jobs")
                #expect(info.scheduled == 5_000 - Int(info.lastSeq))
                try await eventually(within: 60, "a thousand fell due") { try await client.info("jobs").lastSeq >= 1_000 }
                // Each chunk due 3 s after it is sent: the last ones are still pending at the
                // kill, however slow the machine is.
                try await Self.schedule(5_000, on: client, from: 5_000) { _ in Self.nowMillis() + 3_000 }
                #expect(await daemon.stop(SIGKILL) == SIGKILL)
                await client.close()
                let pending = try await DerivedStreamTests.sql(daemon.databasePath, "SELECT count(*) FROM scheduled_events")
                #expect((Int(pending) ?? 0) > 0, "the kill came with events still pending")

                daemon = try await TestDaemon.start(in: directory)
                let again = try await ReplayClient.connect(to: daemon.socketPath)
                try await eventually(within: 60, "every event appended") {
                    let info = try await again.info("jobs")
                    return info.scheduled == 0
                }
                #expect(try await again.info("jobs").lastSeq == 10_000, "nothing twice")
                await again.close()
                let rows = try await DerivedStreamTests.sql(
                    daemon.databasePath, "SELECT CAST(payload AS TEXT) || ' ' || time FROM events WHERE stream = 'jobs'")
                var seen = Set<Int>()
                var early: [String] = []
                for line in rows.split(separator: "\n") {
                    let words = line.split(separator: " ")
                    guard words.count == 3, let index = Int(words[0]), let due = Int64(words[1]),
                        let time = Timestamp.parse(String(words[2]))
                    else {
                        Issue.record("unexpected row \(line)")
                        continue
                    }
                    seen.insert(index)
                    if Timestamp.millis(time) < due { early.append(String(line)) }
                }
                #expect(seen == Set(0..<10_000))
                #expect(early.isEmpty, "appended before their time: \(early.prefix(5))")
                #expect(await daemon.stop() == 0)
            } catch {
                await daemon.stop(SIGKILL)
                throw error
            }
        }
    }

    /// Two daemons on one database, each scheduling half: every due event is appended by
    /// one of them, once. Then one is killed right after scheduling more: the other finds
    /// its events and appends them.
    @Test func twoDaemonsOnPostgreSQLAppendEachDueEventOnce() async throws {
        try await withTwoDaemons { first, second in
            let one = try await ReplayClient.connect(to: first.socketPath)
            let other = try await ReplayClient.connect(to: second.socketPath)
            defer { Task { await other.close() } }
            try await one.create("jobs", unlimited: true)
            let start = Self.nowMillis()
            try await Self.schedule(1_000, on: one) { start + 1_000 + Int64($0) * 20 }
            try await Self.schedule(1_000, on: other, from: 1_000) { start + 1_000 + Int64($0) * 20 }
            try await eventually(within: 60, "every event appended") { try await other.info("jobs").scheduled == 0 }
            // None pending: no append can follow, so the count is final.
            #expect(try await other.info("jobs").lastSeq == 2_000)

            try await Self.schedule(300, on: one, from: 2_000) { _ in Self.nowMillis() + 300 }
            await one.close()
            #expect(await first.stop(SIGKILL) == SIGKILL)
            try await eventually(within: 60, "the survivor appends the killed daemon's events") { try await other.info("jobs").scheduled == 0 }
            #expect(try await other.info("jobs").lastSeq == 2_300)
            var seen = Set<Int>()
            for try await event in try await other.subscribe("jobs", from: .all) {
                if let index = Int(String(decoding: event.payload, as: UTF8.self).split(separator: " ")[0]) { seen.insert(index) }
                if event.sequence == 2_300 { break }
            }
            #expect(seen == Set(0..<2_300))
        }
    }
}
