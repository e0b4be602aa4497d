import Foundation
import ReplayClient
import ReplayTesting
import Testing

/// tools/replay_client.py talks to the same daemon as the Swift client, both ways.
@Suite("Python client", .timeLimit(.minutes(5)))
struct PythonClientTests {
    static let script = toolScript("replay_client.py")

    @Test func pythonReceivesInOrderWhatSwiftPublished() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let payloads = (1...500).map { "swift \($0)" } + ["binary-safe: \r\n inside"]
            _ = try await client.publish("interop", contentsOf: payloads.map { Data($0.utf8) })
            await client.close()
            let result = try await runProgram("/usr/bin/env", ["python3", Self.script, "--socket", daemon.socketPath, "sub", "interop", "--count", "501"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == payloads.joined(separator: "\n") + "\n")
        }
    }

    @Test func swiftReceivesInOrderWhatPythonPublished() async throws {
        try await withDaemon { daemon in
            let lines = (1...500).map { "python \($0)" }
            let result = try await runProgram(
                "/usr/bin/env", ["python3", Self.script, "--socket", daemon.socketPath, "pub", "interop"], stdin: lines.joined(separator: "\n") + "\n")
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == (1...500).map { "\($0)\n" }.joined())
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            var received: [String] = []
            for try await event in try await client.subscribe("interop") {
                received.append(event.text ?? "")
                if received.count == lines.count { break }
            }
            #expect(received == lines)
            await client.close()
        }
    }

    @Test func pythonPublishesAndReadsTraceContext() async throws {
        try await withDaemon { daemon in
            let traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            let program = """
                import sys
                sys.path.insert(0, sys.argv[1])
                import replay_client
                with replay_client.ReplayConnection(sys.argv[2]) as conn:
                    conn.publish("t", [b"a"], trace=sys.argv[3])
                    conn.publish("t", [b"b"])
                    conn.publish_atomically([("t", b"c", None)], trace=sys.argv[3])
                    for event in conn.subscribe("t", count=3):
                        print(event.seq, event.traceparent)
                    for job in conn.group("t", "g"):
                        print("job", job.seq, job.traceparent)
                        if job.seq == 3:
                            break
                """
            let directory = URL(fileURLWithPath: Self.script).deletingLastPathComponent().path
            let result = try await runProgram("/usr/bin/env", ["python3", "-c", program, directory, daemon.socketPath, traced])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "1 \(traced)\n2 None\n3 \(traced)\njob 1 \(traced)\njob 2 None\njob 3 \(traced)\n")
        }
    }

    /// Keys from Python: published with one, read back by a subscriber and a group member,
    /// and the key's current value by `get` (None after its tombstone).
    @Test func pythonPublishesReadsAndGetsKeys() async throws {
        try await withDaemon { daemon in
            let program = """
                import sys
                sys.path.insert(0, sys.argv[1])
                import replay_client
                with replay_client.ReplayConnection(sys.argv[2]) as conn:
                    conn.publish("k", [b"a1", b"a2"], key="a")
                    conn.publish("k", [b"plain"])
                    conn.publish_atomically([("k", b"b1", None)], key="b")
                    print(conn.get("k", "a")["payload"], conn.get("k", "nobody"))
                    for event in conn.subscribe("k", count=4):
                        print(event.seq, event.key)
                with replay_client.ReplayConnection(sys.argv[2]) as conn:
                    conn.publish("k", [b""], key="a")
                    print(conn.get("k", "a"))
                    for job in conn.group("k", "g"):
                        print("job", job.seq, job.key)
                        if job.seq == 4:
                            break
                """
            let directory = URL(fileURLWithPath: Self.script).deletingLastPathComponent().path
            let result = try await runProgram("/usr/bin/env", ["python3", "-c", program, directory, daemon.socketPath])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "a2 None\n1 a\n2 a\n3 None\n4 b\nNone\njob 1 a\njob 2 a\njob 3 None\njob 4 b\n")
        }
    }

    /// Scheduled events from Python: stored with their id and due time, listed, cancelled,
    /// and one already due appended with its key.
    @Test func schedulesListsAndCancels() async throws {
        try await withDaemon { daemon in
            let program = """
                import sys, time
                sys.path.insert(0, sys.argv[1])
                import replay_client
                with replay_client.ReplayConnection(sys.argv[2]) as conn:
                    later = conn.schedule("jobs", b"later", delay=3600)
                    conn.schedule("jobs", "now", at="2026-01-01T00:00:00Z", key="j")
                    print([e["payload"] for e in conn.scheduled("jobs")])
                    conn.unschedule("jobs", later["id"])
                    try:
                        conn.unschedule("jobs", later["id"])
                    except replay_client.ReplayError as error:
                        print(error.code)
                    for event in conn.subscribe("jobs", count=1):
                        print(event.seq, event.payload, event.key)
                    print(conn.scheduled("jobs"))
                """
            let directory = URL(fileURLWithPath: Self.script).deletingLastPathComponent().path
            let result = try await runProgram("/usr/bin/env", ["python3", "-c", program, directory, daemon.socketPath])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = result.stdout.split(separator: "\n")
            #expect(lines.count == 4, "\(result.stdout)")
            #expect(lines.first == "['later']" || lines.first == "['now', 'later']", "the past-due one may be appended already")
            #expect(Array(lines.dropFirst()) == ["unknown_scheduled", "1 b'now' j", "[]"])
        }
    }

    /// Hash chains from Python: each event's hash when asked (as `sqlite3` shows it), to a
    /// subscriber and a group member, `verify()`, and a subscription that meets a changed
    /// event raises `corrupt_event` after the events before it, rather than waiting forever.
    @Test func pythonReadsHashesVerifiesAndStopsAtACorruptEvent() async throws {
        try await withTemporaryDirectory { directory in
            var daemon = try await TestDaemon.start(in: directory)
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            for index in 1...3 { _ = try await client.publish("h", "e\(index)") }
            await client.close()
            await daemon.stop()
            let stored = try await runProgram("/usr/bin/sqlite3", [daemon.databasePath, "SELECT hash FROM events WHERE stream = 'h' ORDER BY seq"])
            _ = try await runProgram(
                "/usr/bin/sqlite3",
                [daemon.databasePath, "UPDATE event_log SET payload = CAST('E3' AS BLOB) WHERE key = ((SELECT id FROM streams WHERE name = 'h') << 40) | 3"])
            daemon = try await TestDaemon.start(in: directory)
            let program = """
                import sys
                sys.path.insert(0, sys.argv[1])
                import replay_client
                with replay_client.ReplayConnection(sys.argv[2]) as conn:
                    try:
                        for event in conn.subscribe("h", hashes=True):
                            print(event.seq, event.hash)
                    except replay_client.ReplayError as error:
                        print("stopped", error.code, str(error).split(":")[0])
                    print("broken", conn.verify("h")[0]["broken"]["sequence"])
                with replay_client.ReplayConnection(sys.argv[2]) as conn:
                    try:
                        for job in conn.group("h", "g", hashes=True):
                            print("job", job.seq, job.hash)
                            job.ack()
                    except replay_client.ReplayError as error:
                        print("job stopped", error.code)
                """
            let tools = URL(fileURLWithPath: Self.script).deletingLastPathComponent().path
            let result = try await runProgram("/usr/bin/env", ["python3", "-c", program, tools, daemon.socketPath])
            await daemon.stop()
            let hashes = stored.stdout.split(separator: "\n").map(String.init)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.hasPrefix("1 \(hashes[0])\n2 \(hashes[1])\nstopped corrupt_event"), "\(result.stdout)")
            #expect(result.stdout.hasSuffix("broken 3\njob 1 \(hashes[0])\njob 2 \(hashes[1])\njob stopped corrupt_event\n"), "\(result.stdout)")
        }
    }

    /// A connection that closes mid-frame (a killed daemon) gives `ConnectionError`, for a
    /// partial line and for a short payload alike, never an `IndexError`.
    @Test(arguments: [
        "EVENT s py1 7",  // the line cut before its payload length
        "EVENT s py1 7 2026-11-23T00:00:00.000Z 10\\r\\nabc",  // the payload cut short
        "EVENT s py1 7 2026-11-23T00:00:00.000Z 3\\r\\nabc",  // the payload's line end missing
    ])
    func aFrameCutByTheConnectionClosingIsAConnectionError(partial: String) async throws {
        let program = """
            import socket, sys, threading
            sys.path.insert(0, sys.argv[1])
            import replay_client
            server, client = socket.socketpair()
            server.sendall(b"HELLO replay 1 proto=1 max_payload=1048576\\r\\n+OK\\r\\n" + b"\(partial)")
            server.shutdown(socket.SHUT_WR)  # the peer stops mid-frame; it still takes the SUB
            conn = replay_client.ReplayConnection.__new__(replay_client.ReplayConnection)
            conn.sock, conn.reader, conn._sid = client, client.makefile("rb"), 0
            conn._line()
            try:
                list(conn.subscribe("s"))
            except ConnectionError as error:
                print("ConnectionError:", error)
            """
        let tools = URL(fileURLWithPath: Self.script).deletingLastPathComponent().path
        let result = try await runProgram("/usr/bin/env", ["python3", "-c", program, tools])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("ConnectionError: "), "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("mid-frame"), "\(result.stdout)")
    }

    @Test func pythonSaysWhenTheDaemonIsNotRunning() async throws {
        let result = try await runProgram("/usr/bin/env", ["python3", Self.script, "--socket", "/nonexistent/replayd.sock", "sub", "x"])
        #expect(result.status == 3)
        #expect(result.stderr.contains("replayd is not running on /nonexistent/replayd.sock"))
    }
}
