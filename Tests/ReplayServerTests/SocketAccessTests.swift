import Foundation
import ReplayTesting
import Testing

/// The socket's access rules (`access` in `--config`), against the real daemon with clients
/// under two uids: the tests run as root, and `setpriv` runs a client as `nobody` (65534).
@Suite("replayd: access rules on the socket", .timeLimit(.minutes(3)))
struct SocketAccessTests {
    static let nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]

    @Test func aUserIsServedWhatItsRulesAllowRefusedTheRestAndItsConnectionStaysOpen() async throws {
        guard getuid() == 0 else {
            throw TestFailure("this test runs clients under another uid with setpriv, which needs root (CI runs the tests as root)")
        }
        try await withTemporaryDirectory { directory in
            // Another user must reach the socket through its folder.
            chmod(directory, 0o755)
            let config = directory + "/replayd.json"
            try #"""
            {"access": [
              {"uid": 0, "streams": "**", "ops": ["read", "write", "admin"]},
              {"uid": 65534, "streams": "shared/**", "ops": ["read"]},
              {"uid": 65534, "streams": "inbox/nobody", "ops": ["read", "write"]}
            ]}
            """#.write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--config", config, "--socket-mode", "0666"])
            defer { Task { await daemon.stop() } }
            let replayctl = try builtExecutable("replayctl")

            // Root's rule allows everything.
            #expect(try await runProgram(replayctl, ["send", "shared/news", "hello", "--socket", daemon.socketPath]).status == 0)
            #expect(try await runProgram(replayctl, ["send", "private/ledger", "secret", "--socket", daemon.socketPath]).status == 0)

            // nobody: refused a write outside its rules, in words, and nothing is written.
            let refused = try await runProgram(
                Self.nobody[0], Array(Self.nobody.dropFirst()) + [replayctl, "send", "shared/news", "x", "--socket", daemon.socketPath])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("forbidden"), "\(refused.stderr)")
            #expect(refused.stderr.contains("uid 65534 may not write 'shared/news'"), "\(refused.stderr)")
            let read = try await runProgram(
                Self.nobody[0], Array(Self.nobody.dropFirst()) + [replayctl, "subscribe", "shared/news", "--count", "1", "--socket", daemon.socketPath])
            #expect(read.status == 0, "\(read.stderr)")
            #expect(read.stdout == "hello\n")

            // One connection: a refused command, then allowed ones; LIST shows what it may read.
            let script = """
                import sys; sys.path.insert(0, sys.argv[1])
                from replay_client import ReplayConnection, ReplayError
                with ReplayConnection(sys.argv[2]) as c:
                    for stream in ("private/ledger", "inbox/nobody"):
                        try:
                            print("published", stream, c.publish(stream, [b"mine"]))
                        except ReplayError as error:
                            print("refused", stream, error)
                    try:
                        list(c.subscribe("private/ledger", "all", 1))
                    except ReplayError as error:
                        print("refused sub", error)
                    print("listed", sorted(s["name"] for s in c._json("LIST")))
                    print("got", [e.payload.decode() for e in c.subscribe("shared/news", "all", 1)])
                """
            let session = try await runProgram(
                Self.nobody[0], Array(Self.nobody.dropFirst()) + ["/usr/bin/python3", "-c", script, toolScript(""), daemon.socketPath])
            #expect(session.status == 0, "\(session.stderr)")
            let lines = session.stdout.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("refused private/ledger") == true, "\(session.stdout)")
            #expect(lines.contains("published inbox/nobody [1]"), "\(session.stdout)")
            #expect(lines.contains { $0.hasPrefix("refused sub") && $0.contains("may not read 'private/ledger'") }, "\(session.stdout)")
            #expect(lines.contains("listed ['inbox/nobody', 'shared/news']"), "\(session.stdout)")
            #expect(lines.last == "got ['hello']", "\(session.stdout)")

            // Root sees that nothing refused was written.
            let ledger = try await runProgram(replayctl, ["subscribe", "private/ledger", "--count", "1", "--socket", daemon.socketPath])
            #expect(ledger.stdout == "secret\n")
            try await Prerequisite.sqlite3.require()
            let streams = try await runProgram("/usr/bin/sqlite3", [daemon.databasePath, "SELECT name, last_seq FROM streams ORDER BY name"])
            #expect(streams.stdout == "inbox/nobody|1\nprivate/ledger|1\nshared/news|1\n", "\(streams.stdout)")
            #expect(daemon.log.contains("socket: denied"))
        }
    }
}
