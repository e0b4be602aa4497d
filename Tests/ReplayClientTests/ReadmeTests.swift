import Foundation
import ReplayTesting
import Testing

/// The README's tour, run as written against a real daemon: every command between the
/// tour markers, in order, as one `set -e` shell script. `swift build` lines are left to
/// .ci/run (they build the release binaries); here the debug binaries are on the PATH.
@Suite("README", .timeLimit(.minutes(3)))
struct ReadmeTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    static func tourCommands() throws -> [String] {
        let readme = try String(contentsOfFile: root + "/README.md", encoding: .utf8)
        guard let start = readme.range(of: "<!-- tour:start"), let end = readme.range(of: "<!-- tour:end -->") else {
            throw TestFailure("README.md has no tour markers")
        }
        var commands: [String] = []
        var inShell = false
        for line in readme[start.upperBound..<end.lowerBound].split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inShell = !inShell && line == "```sh"
                continue
            }
            if inShell, !line.hasPrefix("swift ") { commands.append(String(line)) }
        }
        return commands
    }

    @Test func theTourRunsAsWritten() async throws {
        let commands = try Self.tourCommands()
        #expect(commands.count > 15)
        try await withTemporaryDirectory { home in
            let database = home + "/.local/share/replay/replay.sqlite"
            try FileManager.default.createDirectory(atPath: home + "/.local/share/replay", withIntermediateDirectories: true)
            let daemon = try await TestDaemon.start(in: home, arguments: [], database: ".local/share/replay/replay.sqlite")
            defer { Task { await daemon.stop() } }
            #expect(daemon.databasePath == database)
            var environment = ProcessInfo.processInfo.environment
            environment["HOME"] = home
            environment["REPLAY_SOCKET"] = daemon.socketPath
            environment["PATH"] = builtProductsDirectory() + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
            let script = "set -e\ncd '\(Self.root)'\n" + commands.joined(separator: "\n") + "\n"
            let result = try await runProgram("/bin/sh", ["-c", script], environment: environment)
            #expect(result.status == 0, "the tour failed: \(result.stderr)")
            let output = result.stdout
            for expected in [
                "{\"id\":1}\n{\"id\":2}\n",  // send, then subscribe --count 2
                "102\n103\n104\n",  // capacity 3
                "step 1\nstep 2\nexit status 2\n",  // a failed stream
                "1\n2\n3\nexit status 1\n",  // event sourcing: the stale withdrawal refused
                "1\n2\n3\n191\n4\nexit status 1\n",  // keys: the latest value, then a tombstone
                "already due\nscheduled    1, next due 20",  // a scheduled event due at once, one waiting
                "kept\nevents       1 retained, seq 2...2, last seq 2\n",  // an expired event, not served, then removed
                "events       2 retained, seq 2...3, last seq 3\ncompaction   keeps each key's newest",  // a compacted stream
                "{\"temp\":21}\n{\"temp\":21}\n",  // the lazy source, subscribed twice
                "started 1 time",  // …ran once
                "1|",  // sqlite3 query of the events view
                "\"seq\":100000",  // --last 3 --json
                "job 1: resize a.png\njob 2: resize b.png\njob 3: resize c.png\n",  // replayctl work
                "resizers  0        0        0            0     -       0",  // replayctl groups: nothing pending, no lag
                "120\n300\n{\"ada\":120}\n{\"ada\":120,\"bob\":40}\n{\"ada\":420,\"bob\":40}\n",  // the derived streams: a filter and a scan
                "\"ada\"\n\"bob\"\n\"ada\"\n",  // a read-time filter
                "big-sales|2|300|sales|3",  // sqlite3: an output and the input event it came from
            ] {
                #expect(output.contains(expected), "the tour's output lacks \(expected.debugDescription)")
            }
            #expect(result.stderr.contains("compiler crashed"))
            #expect(result.stderr.contains("wrong_last_seq") && result.stderr.contains("last_seq=3"))
            await daemon.stop()
        }
    }
}
