import Foundation
import ReplayProtocol
import ReplayTesting
import Testing

/// SIGUSR1 makes replayd write its live state to its log: what a hung test (or an
/// operator) needs to tell a subscription that was never woken from a reply never filled.
@Suite("replayd: state dump", .timeLimit(.minutes(5)))
struct StateDumpTests {
    @Test func theDumpShowsEachSubscriptionsPhaseAndTheParkedCursors() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("s", ["one", "two"])
                try await client.send("SUB s live new\r\nSUB s history all\r\n")
                var events = 0
                for frame in try await client.frames(4) {
                    if case .event(_, "history", _, _, _, _, _, _) = frame { events += 1 }
                }
                #expect(events == 2)
                // Both are caught up now: parked after 2, waiting for the third event.
                try await eventually("both subscriptions park") {
                    await TestDaemon.stateDump(socketPath: daemon.socketPath).components(separatedBy: "parked after 2").count == 3
                }
                let dump = await TestDaemon.stateDump(socketPath: daemon.socketPath)
                #expect(dump.contains("live on s: parked after 2"), "\(dump)")
                #expect(dump.contains("history on s: parked after 2"), "\(dump)")
                #expect(dump.contains("stream s: seq 1...2"), "\(dump)")
                #expect(dump.contains("parked after [2, 2]"), "\(dump)")
                #expect(dump.contains("0 replies owed"), "\(dump)")
                // The daemon goes on serving after a dump.
                try await client.send(.ping)
                #expect(try await client.expectFrame() == .pong)
            }
        }
    }
}
