import Foundation
import ReplayClient
import ReplayProtocol
import ReplayTesting
import Testing

/// Stream sources: a cold command made hot, persistent and replayed (E3, E7, E8, E14 as a
/// service), with the real daemon and real child processes.
@Suite("Stream sources", .timeLimit(.minutes(5)))
struct SourceTests {
    func lines(_ file: String) -> Int {
        ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").split(separator: "\n").count
    }

    func events(_ client: ReplayClient, _ stream: String) async throws -> [String] {
        var out: [String] = []
        for try await event in try await client.subscribe(stream) { out.append(event.text ?? "") }
        return out
    }

    /// E3 as a service: the side effect runs zero times before anyone subscribes, once
    /// for three subscribers, and not again after a daemon restart.
    @Test func lazySourceRunsOnceForeverAcrossSubscribersAndRestarts() async throws {
        try await withTemporaryDirectory { directory in
            let counter = directory + "/runs"
            let first = try await TestDaemon.start(in: directory)
            let client = try await ReplayClient.connect(to: first.socketPath)
            try await client.create("fetch", source: "echo run >> \(counter); echo title; echo description", connect: "lazy")
            #expect(try await client.info("fetch").source?.state == "not connected")
            #expect(lines(counter) == 0, "no work before the first subscriber")

            let results = try await withThrowingTaskGroup(of: [String].self) { group in
                for _ in 0..<3 { group.addTask { try await events(client, "fetch") } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.allSatisfy { $0 == ["title", "description"] })
            #expect(lines(counter) == 1)
            let info = try await client.info("fetch")
            #expect(info.terminal == "completed" && info.source?.state == "completed" && info.source?.starts == 1)
            await client.close()
            await first.stop()

            let second = try await TestDaemon.start(in: directory)
            let again = try await ReplayClient.connect(to: second.socketPath)
            #expect(try await events(again, "fetch") == ["title", "description"])
            #expect(lines(counter) == 1, "a completed source never runs again")
            #expect(try await again.info("fetch").source?.command == "echo run >> \(counter); echo title; echo description")
            await again.close()
            await second.stop()
        }
    }

    /// refcount is autoconnect: it runs while anyone subscribes.
    @Test func refcountSourceRunsWhileAnyoneSubscribes() async throws {
        try await withDaemon { daemon in
            let starts = daemon.directory + "/starts"
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create("ticks", source: "echo start >> \(starts); while true; do echo tick; sleep 0.05; done", connect: "refcount")
            #expect(lines(starts) == 0)

            let first = try await client.subscribe("ticks", from: .new)
            var iterator = first.makeAsyncIterator()
            _ = try await iterator.next()
            let pid = try #require(try await client.info("ticks").source?.pid)
            #expect(processIsAlive(pid))
            await first.cancel()
            try await eventually("the source to stop after its last subscriber left") { !processIsAlive(pid) }
            try await eventually("the status to say stopped") { try await client.info("ticks").source?.state == "stopped" }

            let second = try await client.subscribe("ticks", from: .new)
            var again = second.makeAsyncIterator()
            _ = try await again.next()
            #expect(lines(starts) == 2, "connected again for the next subscriber")
            #expect(try await client.info("ticks").source?.starts == 2)
            await second.cancel()
            await client.close()
        }
    }

    /// eager is replay(): it runs with nobody listening; late subscribers get the history.
    @Test func eagerSourceRunsWithNobodyListening() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create("numbers", unlimited: true, source: "seq 1 5", connect: "eager")
            try await eventually("the eager source to complete") { try await client.info("numbers").terminal == "completed" }
            #expect(try await events(client, "numbers") == ["1", "2", "3", "4", "5"])
            await client.close()
        }
    }

    @Test func aFailingSourcesFailureAndStderrAreReplayed() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create("job", source: "echo partial; echo 'disk full' >&2; exit 3", connect: "eager")
            try await eventually("the source to fail") { try await client.info("job").terminal == "failed" }
            await #expect(throws: ReplayClientError.streamFailed(stream: "job", message: "exit status 3; stderr:\ndisk full")) {
                _ = try await events(client, "job")
            }
            let ctl = try await runProgram(try builtExecutable("replayctl"), ["subscribe", "job", "--socket", daemon.socketPath])
            #expect(ctl.status == 2)
            #expect(ctl.stdout == "partial\n")
            #expect(ctl.stderr.contains("exit status 3"))
            #expect(ctl.stderr.contains("disk full"))
            await client.close()
        }
    }

    /// A source that ignores SIGTERM is killed (SIGKILL) once the grace period is over.
    @Test func aSourceIgnoringSIGTERMIsKilledAfterTheGracePeriod() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create(
                "stubborn", source: "trap '' TERM; while true; do echo alive; sleep 0.05; done", connect: "refcount",
                sourceOptions: ["grace": "0.3"])
            let subscription = try await client.subscribe("stubborn", from: .new)
            var iterator = subscription.makeAsyncIterator()
            _ = try await iterator.next()
            let pid = try #require(try await client.info("stubborn").source?.pid)
            await subscription.cancel()
            try await eventually("SIGKILL after the grace period") { !processIsAlive(pid) }
            await client.close()
        }
    }

    /// A source is a process group: stopping it reaches every process of its pipeline, not
    /// only the shell (here a background loop whose pid is the source's first event).
    @Test func stoppingASourceStopsItsWholeProcessGroup() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create("group", source: "(while true; do sleep 0.05; done) & echo $!; wait", connect: "refcount")
            let subscription = try await client.subscribe("group", from: .new)
            var iterator = subscription.makeAsyncIterator()
            let first = try await iterator.next()?.text
            let child = try #require(first.flatMap { Int32($0) })
            let shell = try #require(try await client.info("group").source?.pid)
            #expect(child != shell && processIsAlive(child))
            await subscription.cancel()
            try await eventually("the shell and its background child to stop") { !processIsAlive(shell) && !processIsAlive(child) }
            await client.close()
        }
    }

    /// Sources pressing on the store wait without holding a thread of the daemon's shared
    /// pools: with more of them than the cooperative pool has threads, other connections'
    /// commands that go through their tasks (SUB, CREATE) are still served.
    @Test func sourcesWaitingForTheStoreDoNotStallOtherConnections() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            for index in 0..<6 {
                try await client.create("firehose\(index)", capacity: 1000, source: "yes event", connect: "eager")
            }
            try await eventually("every firehose running") {
                try await (0..<6).asyncAllSatisfy { try await client.info("firehose\($0)").lastSeq > 1000 }
            }
            let other = try await ReplayClient.connect(to: daemon.socketPath)
            try await other.create("quiet")
            let subscription = try await other.subscribe("quiet", from: .new)
            var iterator = subscription.makeAsyncIterator()
            let sequence = try await other.publish("quiet", "hello")
            #expect(try await iterator.next()?.sequence == sequence)
            for index in 0..<6 { try await client.delete("firehose\(index)") }
            await other.close()
            await client.close()
        }
    }

    /// A clean shutdown stops every running source, and waits for it: once replayd has
    /// exited, no process of a source's group is left (the next daemon would run it twice).
    @Test func aCleanShutdownLeavesNoSourceRunning() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory)
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create(
                "ticker", source: "(trap '' TERM; while true; do sleep 0.05; done) & echo $!; wait", connect: "eager",
                sourceOptions: ["grace": "0.5"])
            let subscription = try await client.subscribe("ticker")
            var iterator = subscription.makeAsyncIterator()
            let first = try await iterator.next()?.text
            let child = try #require(first.flatMap { Int32($0) })
            let shell = try #require(try await client.info("ticker").source?.pid)
            await client.close()
            #expect(await daemon.stop() == 0)
            #expect(!processIsAlive(shell) && !processIsAlive(child), "a source outlived its daemon")
        }
    }

    @Test func restartOnFailureWithBackoffThenSuccess() async throws {
        try await withDaemon { daemon in
            let attempts = daemon.directory + "/attempts"
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let command = "n=$(( $(cat \(attempts) 2>/dev/null || echo 0) + 1 )); echo $n > \(attempts); echo attempt $n; [ $n -ge 3 ]"
            try await client.create(
                "flaky", unlimited: true, source: command, connect: "eager",
                sourceOptions: ["restart": "on-failure", "max_restarts": "5", "restart_delay": "0.05"])
            try await eventually("the third attempt to succeed") { try await client.info("flaky").terminal == "completed" }
            #expect(try await events(client, "flaky") == ["attempt 1", "attempt 2", "attempt 3"])
            #expect(try await client.info("flaky").source?.starts == 3)

            try await client.create(
                "hopeless", source: "echo try; exit 1", connect: "eager",
                sourceOptions: ["restart": "on-failure", "max_restarts": "2", "restart_delay": "0.05"])
            try await eventually("the restarts to run out") { try await client.info("hopeless").terminal == "failed" }
            #expect(try await client.info("hopeless").source?.starts == 3, "one run and two restarts")
            await client.close()
        }
    }

    /// reset lets a terminal stream run its source again, which learns where the stream
    /// stands from its environment.
    @Test func resetRunsTheSourceAgainWithTheLastSequenceInItsEnvironment() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create(
                "resumable", unlimited: true, source: #"echo "after $REPLAY_LAST_SEQ ($REPLAY_LAST_PAYLOAD) in $REPLAY_STREAM""#, connect: "eager")
            try await eventually("the first run") { try await client.info("resumable").terminal == "completed" }
            try await client.reset("resumable", keepHistory: true)
            try await eventually("the second run") { try await client.info("resumable").terminal == "completed" }
            #expect(try await events(client, "resumable") == ["after 0 () in resumable", "after 1 (after 0 () in resumable) in resumable"])
            await client.close()
        }
    }

    /// A source that writes a million lines as fast as it can, into a store that commits
    /// at durability full: the daemon stops reading the pipe while the store is behind,
    /// so its memory stays bounded, and every line is stored.
    @Test func aFastSourceIntoASlowStoreKeepsMemoryBounded() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let baseline = daemon.residentBytes
            var peak = baseline
            try await client.create("firehose", unlimited: true, source: "seq 1 1000000", connect: "eager")
            try await eventually(within: 240, "a million lines stored") {
                peak = max(peak, daemon.residentBytes)
                return try await client.info("firehose").terminal == "completed"
            }
            let info = try await client.info("firehose")
            #expect(info.lastSeq == 1_000_000 && info.count == 1_000_000)
            #expect(peak - baseline < memoryBudget(100 << 20), "RSS grew by \((peak - baseline) >> 20) MB")
            await client.close()
        }
    }

    @Test(arguments: [
        ("nul", #"printf 'a\0b\nc\0'"#, ["a", "b\nc"]), ("whole", "printf 'one\ntwo\n'", ["one\ntwo\n"]), ("lines", "printf 'x\r\ny\nz'", ["x", "y", "z"]),
    ])
    func framings(framing: String, command: String, expected: [String]) async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create("framed", source: command, connect: "eager", sourceOptions: ["framing": framing])
            try await eventually("the source to complete") { try await client.info("framed").terminal == "completed" }
            #expect(try await events(client, "framed") == expected)
            await client.close()
        }
    }

    /// After a daemon restart, an eager source that had not ended runs again; a lazy one
    /// waits for its first subscriber.
    @Test func afterARestartEagerSourcesRunAgainAndLazyOnesWait() async throws {
        try await withTemporaryDirectory { directory in
            let eagerRuns = directory + "/eager"
            let lazyRuns = directory + "/lazy"
            let first = try await TestDaemon.start(in: directory)
            let client = try await ReplayClient.connect(to: first.socketPath)
            try await client.create("eager", source: "echo run >> \(eagerRuns); while true; do sleep 0.05; done", connect: "eager")
            try await client.create("lazy", source: "echo run >> \(lazyRuns); while true; do echo x; sleep 0.05; done", connect: "lazy")
            try await eventually("the eager source to start") { lines(eagerRuns) == 1 }
            var iterator = try await client.subscribe("lazy", from: .new).makeAsyncIterator()
            _ = try await iterator.next()
            #expect(lines(lazyRuns) == 1)
            await client.close()
            #expect(await first.stop() == 0)
            #expect(lines(eagerRuns) == 1 && lines(lazyRuns) == 1, "shutdown stops sources without ending the streams")

            let second = try await TestDaemon.start(in: directory)
            let again = try await ReplayClient.connect(to: second.socketPath)
            try await eventually("the eager source to run again") { lines(eagerRuns) == 2 }
            #expect(try await again.info("eager").terminal == nil)
            #expect(try await again.info("lazy").source?.state == "not connected")
            #expect(lines(lazyRuns) == 1, "a lazy source waits for its first subscriber")
            var next = try await again.subscribe("lazy", from: .new).makeAsyncIterator()
            _ = try await next.next()
            #expect(lines(lazyRuns) == 2)
            await again.close()
            await second.stop()
        }
    }
}

extension Sequence where Element: Sendable {
    func asyncAllSatisfy(_ predicate: (Element) async throws -> Bool) async rethrows -> Bool {
        for element in self where !(try await predicate(element)) { return false }
        return true
    }
}
