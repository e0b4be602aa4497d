import Foundation
import ReplayClient
import ReplayProtocol
import ReplayTesting
import Testing

/// The guarantees through the Swift client, replayctl and the Python client.
@Suite("Guarantees in the clients", .timeLimit(.minutes(3)))
struct GuaranteeClientTests {
    var replayctl: String { get throws { try builtExecutable("replayctl") } }

    @Test func theSwiftClientPublishesWithExpectationsAtomicallyAndAsADurableConsumer() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            #expect(try await client.publish("account", "opened", expect: 0) == 1)
            await #expect(throws: ReplayClientError.self) { try await client.publish("account", "again", expect: 0) }
            #expect(
                try await client.publishAtomically([
                    AtomicEvent(stream: "account", "deposited 10", expect: 1),
                    AtomicEvent(stream: "audit", "account +10"),
                ]) == [2, 1])

            let durable = try await client.subscribe("account", durable: "projector")
            var events = durable.makeAsyncIterator()
            let first = try #require(try await events.next())
            try await durable.acknowledge(first.sequence)
            await durable.cancel()
            #expect(try await client.consumers("account").map(\.ackedSeq) == [1])
            let resumed = try await client.subscribe("account", durable: "projector")
            var again = resumed.makeAsyncIterator()
            #expect(try await again.next()?.text == "deposited 10", "it resumes after its acknowledged event")
            try await client.deleteConsumer("projector", of: "account")
            #expect(try await client.consumers("account").isEmpty)
            await client.close()
        }
    }

    /// The producer's connection is cut by a daemon restart between two publishes; it
    /// reconnects, and a retried batch stores nothing twice.
    @Test func anIdempotentProducerRetriesThroughARestartWithoutDuplicates() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await TestDaemon.start(in: directory)
            var producer = IdempotentProducer(socketPath: first.socketPath, stream: "pay", id: "billing", epoch: 2, initialBackoff: 0.02)
            #expect(try await producer.publish([Data("a".utf8), Data("b".utf8)]) == [1, 2])
            await first.stop(SIGKILL)
            let second = try await TestDaemon.start(in: directory)
            #expect(try await producer.publish(Data("c".utf8)) == 3)
            // The same stamps again (a retry whose answers were lost): the original numbers.
            var replay = IdempotentProducer(socketPath: second.socketPath, stream: "pay", id: "billing", epoch: 2)
            #expect(try await replay.publish([Data("a".utf8), Data("b".utf8), Data("c".utf8)]) == [1, 2, 3])
            let client = try await ReplayClient.connect(to: second.socketPath)
            #expect(try await client.info("pay").count == 3)
            await client.close()
            await producer.close()
            await replay.close()
            await second.stop()
        }
    }

    @Test func replayctlSendsWithExpectProducerAndAtomic() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            let first = try await runProgram(ctl, ["send", "ledger", "--expect", "0", "open", "credit"] + socket)
            #expect(first.status == 0 && first.stdout == "1\n2\n")
            let stale = try await runProgram(ctl, ["send", "ledger", "--expect", "0", "late"] + socket)
            #expect(stale.status == 1 && stale.stdout.isEmpty)
            #expect(stale.stderr.contains("wrong_last_seq") && stale.stderr.contains("last_seq=2"), "\(stale.stderr)")

            let produce = ["send", "ledger", "--producer", "importer", "--epoch", "1", "x", "y"] + socket
            let once = try await runProgram(ctl, produce)
            #expect(once.status == 0 && once.stdout == "3\n4\n")
            let twice = try await runProgram(ctl, produce)
            #expect(twice.status == 0 && twice.stdout == "3\n4\n", "an identical invocation prints the same numbers")

            let atomic = try await runProgram(ctl, ["send", "ledger", "--atomic"] + socket, stdin: "p\nq\n")
            #expect(atomic.status == 0 && atomic.stdout == "5\n6\n")

            let durable = try await runProgram(ctl, ["subscribe", "ledger", "--durable", "auditor", "--count", "4"] + socket)
            #expect(durable.status == 0 && durable.stdout == "open\ncredit\nx\ny\n")
            let rest = try await runProgram(ctl, ["subscribe", "ledger", "--durable", "auditor", "--count", "2"] + socket)
            #expect(rest.stdout == "p\nq\n", "the second run resumes after the first one's acknowledgements")
            let consumers = try await runProgram(ctl, ["consumers", "ledger"] + socket)
            #expect(
                consumers.stdout.contains("auditor") && consumers.stdout.split(separator: "\n").last?.hasSuffix("6          0") == true, "\(consumers.stdout)")
        }
    }

    @Test func thePythonClientHasTheSameSurface() async throws {
        try await withDaemon { daemon in
            let program = """
                import sys
                sys.path.insert(0, sys.argv[1])
                import replay_client
                with replay_client.ReplayConnection(sys.argv[2]) as conn:
                    print(conn.publish("acct", [b"open"], expect=0))
                    try:
                        conn.publish("acct", [b"dup"], expect=0)
                    except replay_client.ReplayError as error:
                        print(error.code)
                    print(conn.publish("acct", [b"a", b"b"], producer="p", epoch=1, pseq=0))
                    print(conn.publish("acct", [b"a", b"b"], producer="p", epoch=1, pseq=0))
                    print(conn.publish_atomically([("acct", b"x", 3), ("other", b"y", None)]))
                    print([e.seq for e in conn.subscribe("acct", durable="d", count=2)])
                    print([(c["name"], c["acked_seq"]) for c in conn.consumers("acct")])
                    print([e.seq for e in conn.subscribe("acct", durable="d", count=2)])
                """
            let tools = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path + "/tools"
            let result = try await runProgram("/usr/bin/env", ["python3", "-c", program, tools, daemon.socketPath])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "[1]\nwrong_last_seq\n[2, 3]\n[2, 3]\n[4, 1]\n[1, 2]\n[('d', 2)]\n[3, 4]\n")
        }
    }
}
