import Foundation
import ReplayProtocol
import ReplayTesting
import Testing

@testable import replayctl

/// `replayctl top`: its figures and layout from snapshots (no terminal), and the real
/// command in a pseudo-terminal against the real daemon (tools/top_check.py).
@Suite("replayctl top", .timeLimit(.minutes(3)))
struct TopTests {
    static func stream(_ name: String, last: UInt64, delivered: Int, source: SourceDescription? = nil) -> StreamDescription {
        StreamDescription(
            name: name, capacity: nil, maxBytes: nil, maxAge: nil, createdAt: "2026-11-25T00:00:00.000Z", firstSeq: 1, lastSeq: last,
            count: Int(last), bytes: 0, terminal: nil, terminalMessage: nil, subscribers: 1, source: source, delivered: delivered)
    }

    /// A derived stream's row says its derivation's status and its lag behind its inputs.
    @Test func aDerivedStreamShowsItsDerivation() {
        var derived = Self.stream("big", last: 3, delivered: 0)
        derived.derivation = DerivationDescription(
            stream: "big", inputs: ["orders"], program: ".", scan: nil, connect: "eager", onError: "stop", status: .stopped, lag: 12,
            positions: ["orders": 5], processed: 5, errors: 1, error: "orders seq 6: the event is not JSON", rate: 0, stateBytes: 40, lastSeq: 3)
        var board = TopBoard()
        board.update([derived], lags: [:], at: 100)
        #expect(board.rows[0].source == "derived stopped, lag 12")
    }

    @Test func ratesComeFromTwoSnapshotsAndTheOrderChanges() {
        var board = TopBoard()
        board.update([Self.stream("a", last: 10, delivered: 0), Self.stream("b", last: 0, delivered: 0)], lags: [:], at: 100)
        #expect(board.rows.allSatisfy { $0.published == 0 }, "one snapshot: no rates yet")
        let failing = SourceDescription(
            command: "x", connect: "eager", framing: "lines", restart: "on-failure", state: "restarting", pid: nil, starts: 3, reason: "exit status 2")
        board.update(
            [Self.stream("a", last: 30, delivered: 40), Self.stream("b", last: 5, delivered: 0, source: failing)], lags: ["b": 7], at: 102)
        #expect(board.rows.map(\.name) == ["a", "b"])
        #expect(board.rows[0].published == 10 && board.rows[0].delivered == 20)
        #expect(board.rows[1].published == 2.5 && board.rows[1].lag == 7 && board.rows[1].source == "restarting (2 restarts)")
        board.cycleOrder()
        #expect(board.order == .lag && board.rows.map(\.name) == ["b", "a"])
        board.cycleOrder()
        #expect(board.order == .name)

        let screen = board.render(width: 60, height: 4)
        #expect(screen[0] == "replay top: 2 streams, 12 in, 20 out, by name   s: sort  q: ", "cut to the width")
        #expect(screen[2].hasPrefix("STREAM  IN/s  OUT/s  EVENTS  LAG  SUBS"))
        #expect(screen.count == 4, "only the rows that fit: summary, blank, header, one row")
        #expect(screen[3] == "a         10     20      30    -     1      -  -       open", "numbers right-aligned under their headers")
    }

    /// Scheduled events waiting for their time have a column of their own.
    @Test func scheduledEventsAreCounted() {
        var stream = Self.stream("jobs", last: 2, delivered: 0)
        stream.scheduled = 1_500
        var board = TopBoard()
        board.update([stream, Self.stream("plain", last: 0, delivered: 0)], lags: [:], at: 100)
        let screen = board.render(width: 80, height: 10, keys: false)
        #expect(screen[2].contains("SUBS  SCHED  SOURCE"))
        #expect(screen[3] == "jobs     0.0    0.0       2    -     1   1500  -       open")
        #expect(screen[4] == "plain    0.0    0.0       0    -     1      -  -       open", "none waiting: a dash")
    }

    /// A compacted stream says so, and how many events its compaction removed.
    @Test func aCompactedStreamShowsItsCompaction() {
        var stream = Self.stream("prices", last: 9, delivered: 0)
        stream.compaction = CompactionDescription(tombstoneRetention: 86_400, lastRun: "2026-11-30T12:00:00.000Z", removed: 8)
        var board = TopBoard()
        board.update([stream], lags: [:], at: 100)
        #expect(board.rows[0].source == "compacted, 8 removed")
    }

    @Test func theCommandRunsInATerminalAndQuitsOnQ() async throws {
        try await withDaemon { daemon in
            let result = try await runProgram(
                "/usr/bin/env", ["python3", toolScript("top_check.py"), "--replayctl", try builtExecutable("replayctl"), "--socket", daemon.socketPath])
            #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
            let summary = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
            #expect(summary["by_lag"] as? Bool == true)
            #expect(summary["left_alternate_screen"] as? Bool == true)
            #expect((summary["header"] as? String)?.hasPrefix("replay top: 2 streams") == true, "\(result.stdout)")
        }
    }

    @Test func withoutATerminalItPrintsOneSnapshot() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in _ = try await client.send(.ping) }
            let result = try await runProgram(try builtExecutable("replayctl"), ["top", "--socket", daemon.socketPath, "--interval", "0.1"])
            #expect(result.status == 0)
            #expect(result.stdout.hasPrefix("replay top: 0 streams, 0.0 in, 0.0 out, by rate\n"), "\(result.stdout)")
            #expect(!result.stdout.contains("\u{1B}"))
        }
    }
}
