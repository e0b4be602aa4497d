import Foundation
import ReplayClient
import ReplayProtocol
import ReplayTesting
import Testing

/// Scheduled sources against the real daemon: a tick missed while it was down runs once
/// at start, and one real minute's tick runs once across two daemons on PostgreSQL.
@Suite("Scheduled sources", .timeLimit(.minutes(4)))
struct ScheduledSourceTests {
    /// A yearly schedule whose last tick was claimed two years ago: the start runs it
    /// once, not once per missed year, and the next start finds nothing to make up. The
    /// run's end leaves the stream open.
    @Test func aTickMissedWhileDownRunsOnceAtStart() async throws {
        try await withTemporaryDirectory { directory in
            var daemon = try await TestDaemon.start(in: directory)
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create(
                "yearly", unlimited: true, source: "echo ran", sourceOptions: ["schedule": "0_0_1_1_*"])
            let source = try #require(try await client.info("yearly").source)
            #expect(source.connect == "eager" && source.state == "waiting" && source.schedule == "0 0 1 1 *")
            #expect(source.nextRun?.hasSuffix("-01-01T00:00:00.000Z") == true, "\(source)")
            #expect(try await client.info("yearly").lastSeq == 0, "created after the last tick: nothing to make up")
            await client.close()
            #expect(await daemon.stop() == 0)

            let twoYearsAgo = Int64(Date().timeIntervalSince1970 * 1000) - 2 * 366 * 86_400_000
            _ = try await DerivedStreamTests.sql(daemon.databasePath, "UPDATE source_ticks SET last_tick = \(twoYearsAgo)")
            _ = try await DerivedStreamTests.sql(
                daemon.databasePath, "INSERT OR IGNORE INTO source_ticks SELECT id, \(twoYearsAgo) FROM streams WHERE name = 'yearly'")
            for _ in 0..<2 {
                daemon = try await TestDaemon.start(in: directory)
                let again = try await ReplayClient.connect(to: daemon.socketPath)
                try await eventually("the missed ticks' one run") {
                    let info = try await again.info("yearly")
                    return info.lastSeq >= 1 && info.source?.state == "waiting"
                }
                let info = try await again.info("yearly")
                #expect(info.lastSeq == 1 && info.terminal == nil, "one run for two missed years, and the stream stays open")
                await again.close()
                #expect(await daemon.stop() == 0)
            }
        }
    }

    /// `* * * * *` on two daemons sharing PostgreSQL: the next real minute's tick runs
    /// once, on one of them.
    @Test func oneRealMinutesTickRunsOnceOnTwoDaemons() async throws {
        try await withTwoDaemons { first, second in
            let one = try await ReplayClient.connect(to: first.socketPath)
            let other = try await ReplayClient.connect(to: second.socketPath)
            defer {
                Task {
                    await one.close()
                    await other.close()
                }
            }
            try await one.create("minutely", unlimited: true, source: "echo tick", sourceOptions: ["schedule": "* * * * *"])
            let started = Date()
            // The other daemon learns of the stream from PostgreSQL a moment after its creation.
            try await eventually(within: 100, "the next minute's tick") { ((try? await other.info("minutely"))?.lastSeq ?? 0) >= 1 }
            // The tick ran once: the other daemon's claim was refused. Another minute may
            // have come meanwhile on a slow machine; each tick is one line either way.
            let minutes = Int(Date().timeIntervalSince(started) / 60) + 1
            let events = try await one.info("minutely").lastSeq
            #expect(events >= 1 && events <= UInt64(minutes), "\(events) runs in \(minutes) minute(s)")
            var payloads: [String] = []
            for try await event in try await other.subscribe("minutely") {
                payloads.append(event.text ?? "")
                if payloads.count == Int(events) { break }
            }
            #expect(payloads.allSatisfy { $0 == "tick" })
        }
    }
}
