import Foundation
import NIOCore
import ReplayClient
import ReplayCore
import ReplayModel
import ReplayProtocol
import ReplaySync
import ReplayTesting
import Testing

/// Several hosts, one log: two real `replayd` on one real PostgreSQL database, each with
/// its own socket, as two hosts would run them.
@Suite("replayd: two daemons on one PostgreSQL", .timeLimit(.minutes(5)))
struct SharedPostgresTests {
    @Test func publishedOnOneIsReplayedAndDeliveredLiveOnTheOther() async throws {
        try await withTwoDaemons { first, second in
            #expect(try await withWireClient(first.socketPath) { try await $0.publish("orders", ["a", "b"]) } == [1, 2])
            try await withWireClient(second.socketPath) { subscriber in
                try await subscriber.subscribe("orders", sid: "s")
                #expect(try await subscriber.events(2).map(\.1) == ["a", "b"], "history written by the other daemon")
                #expect(try await withWireClient(first.socketPath) { try await $0.publish("orders", ["c"]) } == [3])
                let live = try await subscriber.events(1)
                #expect(live.map(\.0) == [3] && live.map(\.1) == ["c"], "a live event committed by the other daemon")
            }
        }
    }

    @Test func killingOneDaemonUnderLoadLosesNothingAcknowledgedAndTheOtherServesOn() async throws {
        try await withTwoDaemons { first, second in
            let acknowledged = Locked<[UInt64: String]>([:])
            let publisher = Task {
                try await withWireClient(first.socketPath) { client in
                    for batch in 0... {
                        let payloads = (0..<50).map { "b\(batch)-\($0)" }
                        let sequences = try await client.publish("load", payloads)
                        acknowledged.withLock { for (sequence, payload) in zip(sequences, payloads) { $0[sequence] = payload } }
                    }
                }
            }
            while acknowledged.withLock({ $0.count }) < 2_000 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(await first.stop(SIGKILL) == SIGKILL)
            _ = await publisher.result
            let acked = acknowledged.value
            let next = try await withWireClient(second.socketPath) { client in
                // The other daemon takes the next numbers after everything the killed one committed.
                let next = try #require(try await client.publish("load", ["after"]).first)
                #expect(next > acked.keys.max()!)
                try await client.subscribe("load", sid: "all")
                let stored = Dictionary(uniqueKeysWithValues: try await client.events(Int(next)).map { ($0.0, $0.1) })
                #expect(Array(stored.keys).sorted() == Array(1...next), "no hole")
                for (sequence, payload) in acked { #expect(stored[sequence] == payload, "acknowledged #\(sequence)") }
                return next
            }
            // The chain goes on across the kill and from one daemon to the other. It ends at the
            // other daemon's event, which may come after a batch the killed one committed but
            // died before acknowledging: so `next`, not the last acknowledged number plus one.
            let reports = try await Self.verify("load", on: second)
            #expect(reports.allSatisfy(\.isIntact) && reports.first?.last == next, "\(reports)")
        }
    }

    /// The daemon's own check of `stream`'s hash chain (`VERIFY`).
    static func verify(_ stream: String, on daemon: TestDaemon) async throws -> [ChainReport] {
        let client = try await ReplayClient.connect(to: daemon.socketPath)
        defer { Task { await client.close() } }
        return try await client.verify([stream])
    }

    @Test func postgresRestartingUnderLoadGivesClearErrorsThenRecoversLosingNothing() async throws {
        try await TestPostgres.withPrivateServer { server in
            try await withTwoDaemons(on: server.url) { first, second in
                let acknowledged = Locked<[UInt64: String]>([:])
                let refusals = Locked<[ReplayError]>([])
                // A subscriber on the other daemon, live through the outage.
                try await withWireClient(second.socketPath) { subscriber in
                    try await subscriber.subscribe("orders", sid: "live")
                    let publisher = Task {
                        try await withWireClient(first.socketPath) { client in
                            var n = 0
                            while acknowledged.withLock({ $0.count }) < 400 {
                                n += 1
                                switch try await client.tryPublish("orders", "e\(n)") {
                                case .success(let sequence): acknowledged.withLock { $0[sequence] = "e\(n)" }
                                case .failure(let error): refusals.withLock { $0.append(error) }
                                }
                            }
                        }
                    }
                    while acknowledged.withLock({ $0.count }) < 100 { try await Task.sleep(for: .milliseconds(5)) }
                    try await server.pause()
                    while refusals.withLock({ $0.count }) < 3 { try await Task.sleep(for: .milliseconds(5)) }
                    try await server.resume()
                    try await publisher.value
                    let errors = refusals.value
                    #expect(errors.allSatisfy { $0.code == .storageUnavailable }, "\(errors)")
                    let acked = acknowledged.value
                    let last = acked.keys.max()!
                    // The subscriber kept its position: everything acknowledged arrives, once, in order.
                    var seen: [UInt64: String] = [:]
                    var previous: UInt64 = 0
                    while previous < last {
                        for (sequence, payload) in try await subscriber.events(1) {
                            #expect(sequence > previous)
                            previous = sequence
                            seen[sequence] = payload
                        }
                    }
                    for (sequence, payload) in acked { #expect(seen[sequence] == payload, "acknowledged #\(sequence)") }
                }
            }
        }
    }

    @Test func aLazySourceRunsOnceAcrossBothAndMovesWhenItsDaemonDies() async throws {
        try await withTwoDaemons { first, second in
            let runs = first.directory + "/runs"
            let lazy = try await ReplayClient.connect(to: first.socketPath)
            try await lazy.create("feed", source: "echo run >> \(runs); while true; do echo x; sleep 0.05; done", connect: "lazy")
            await lazy.close()
            // A subscriber on each daemon; each gets events, from one run.
            let onFirst = try await ReplayClient.connect(to: first.socketPath)
            var fromFirst = try await onFirst.subscribe("feed", from: .new).makeAsyncIterator()
            _ = try await fromFirst.next()
            let onSecond = try await ReplayClient.connect(to: second.socketPath)
            var fromSecond = try await onSecond.subscribe("feed", from: .new).makeAsyncIterator()
            for _ in 0..<20 { _ = try await fromSecond.next() }
            #expect(lineCount(runs) == 1, "one run for subscribers on two daemons")
            #expect(try await onSecond.info("feed").source?.state == "not connected", "the second daemon does not run it")
            // The daemon running it dies: the other takes the source over, and its subscriber reads on.
            await onFirst.close()
            #expect(await first.stop(SIGKILL) == SIGKILL)
            try await eventually("the second daemon to run the source") { try await onSecond.info("feed").source?.state == "running" }
            // "running" is the process started; its shell writes its line a moment later.
            try await eventually("the second run to write its line") { lineCount(runs) == 2 }
            #expect(lineCount(runs) == 2)
            for _ in 0..<5 { _ = try await fromSecond.next() }
            await onSecond.close()
        }
    }

    @Test func anEagerSourceMovesToTheOtherDaemonWhenItsDaemonDies() async throws {
        try await withTwoDaemons { first, second in
            let runs = first.directory + "/eager-runs"
            let client = try await ReplayClient.connect(to: first.socketPath)
            try await client.create("clock", source: "echo run >> \(runs); while true; do echo tick; sleep 0.05; done", connect: "eager")
            await client.close()
            try await eventually("a daemon to run it") { lineCount(runs) == 1 }
            // Whichever claimed it first runs it (the creating daemon, as a rule); the other waits.
            var states: [String] = []
            try await eventually("both daemons to know the stream") {
                states = []
                for daemon in [first, second] {
                    let client = try await ReplayClient.connect(to: daemon.socketPath)
                    states.append((try? await client.info("clock"))?.source?.state ?? "unknown")
                    await client.close()
                }
                return !states.contains("unknown")
            }
            #expect(states.sorted() == ["not connected", "running"], "\(states)")
            let (runner, other) = states[0] == "running" ? (first, second) : (second, first)
            #expect(await runner.stop(SIGKILL) == SIGKILL)
            let survivor = try await ReplayClient.connect(to: other.socketPath)
            try await eventually("the other daemon to run it") { try await survivor.info("clock").source?.state == "running" }
            // "running" is the process started; its shell writes its line a moment later.
            try await eventually("the second run to write its line") { lineCount(runs) >= 2 }
            #expect(lineCount(runs) == 2, "one run at a time: the first daemon's, then the other's")
            await survivor.close()
        }
    }

    @Test(arguments: ["eager", "refcount"])
    func aSourceNeverRunsTwiceAtOnceThroughAPostgresRestart(connect: String) async throws {
        try await TestPostgres.withPrivateServer { server in
            try await withTwoDaemons(on: server.url) { first, second in
                let folder = first.directory
                // A run holds a lock folder while it runs (let go however it stops: TERM, or
                // SIGPIPE once its reader is gone); a run that finds it taken notes an overlap.
                let command = """
                    trap 'rmdir \(folder)/running 2>/dev/null' EXIT; trap 'exit 0' TERM PIPE INT; \
                    mkdir \(folder)/running 2>/dev/null || echo overlap >> \(folder)/overlaps; \
                    echo run >> \(folder)/runs; while true; do echo tick || exit 0; sleep 0.05; done
                    """
                let client = try await ReplayClient.connect(to: first.socketPath)
                try await client.create("clock", source: command, connect: connect)
                // A refcount source runs while someone subscribes: one subscriber on each daemon.
                var subscribers: [ReplayClient] = []
                var feeds: [Any] = []
                if connect == "refcount" {
                    for daemon in [first, second] {
                        let subscriber = try await ReplayClient.connect(to: daemon.socketPath)
                        try await eventually("the daemon to know the stream") { (try? await subscriber.info("clock")) != nil }
                        feeds.append(try await subscriber.subscribe("clock", from: .new))
                        subscribers.append(subscriber)
                    }
                }
                await client.close()
                try await eventually("a daemon to run it") { lineCount(folder + "/runs") == 1 }
                try await server.pause()
                try await Task.sleep(for: .seconds(1))
                try await server.resume()
                try await eventually("a daemon to run it again after the restart") { lineCount(folder + "/runs") >= 2 }
                // Not a timing assertion: an overlap, if any, leaves its line whenever it happens.
                try await Task.sleep(for: .seconds(3))
                #expect(lineCount(folder + "/overlaps") == 0, "two runs at once")
                var running = 0
                for daemon in [first, second] {
                    let client = try await ReplayClient.connect(to: daemon.socketPath)
                    if try await client.info("clock").source?.state == "running" { running += 1 }
                    await client.close()
                }
                #expect(running == 1)
                for subscriber in subscribers { await subscriber.close() }
                feeds.removeAll()
            }
        }
    }

    @Test func publishersOnBothDaemonsGetOneContiguousSequence() async throws {
        try await withTwoDaemons { first, second in
            let perPublisher = 200
            let all = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for (index, daemon) in [first, second, first, second].enumerated() {
                    group.addTask {
                        try await withWireClient(daemon.socketPath) { client in
                            var sequences: [UInt64] = []
                            for chunk in stride(from: 0, to: perPublisher, by: 20) {
                                sequences += try await client.publish("shared", (chunk..<chunk + 20).map { "p\(index)-\($0)" })
                            }
                            return sequences
                        }
                    }
                }
                var all: [UInt64] = []
                for try await part in group {
                    #expect(part == part.sorted(), "one connection's publishes keep their order")
                    all += part
                }
                return all
            }
            #expect(all.sorted() == Array(1...UInt64(4 * perPublisher)), "no hole, no number given twice")
            // Both daemons replay the same log.
            for daemon in [first, second] {
                try await withWireClient(daemon.socketPath) { client in
                    try await client.subscribe("shared", sid: "all")
                    let events = try await client.events(4 * perPublisher)
                    #expect(events.map(\.0) == Array(1...UInt64(4 * perPublisher)))
                }
                // One chain, though two daemons wrote it in turns, each from the head the
                // other's notice or row gave it.
                let reports = try await Self.verify("shared", on: daemon)
                #expect(reports.first?.isIntact == true && reports.first?.events == 4 * perPublisher, "\(reports)")
            }
        }
    }
}

extension SharedPostgresTests {
    /// A stream one daemon writes alone is written on the row it last saw, without the
    /// locks; a row changed behind its back (here by hand, as another daemon's commit whose
    /// notification has not arrived yet) is caught by PostgreSQL, and the batch runs again
    /// under the locks on the row as it now is: the stream closed meanwhile stays closed.
    @Test func aStreamWrittenByOneDaemonTakesNoLocksAndAChangeBehindItsBackIsCaught() async throws {
        try await TestPostgres.withDatabase { url in
            try await withTwoDaemons(on: url, arguments: ["--http", "127.0.0.1:0"]) { first, _ in
                let http = try HTTPTestClient(address: try await first.httpAddress())
                func metric(_ name: String) async throws -> Double { try await metricValue(name, from: http) }
                try await withWireClient(first.socketPath) { client in
                    for index in 1...20 {
                        #expect(try await client.tryPublish("solo", "e\(index)") == .success(UInt64(index)))
                    }
                    let cached = try await metric(#"replay_postgres_commits_total{rows="cached"}"#)
                    #expect(cached >= 15, "all but the first few publishes (the stream's creation, the start's refresh) take no locks: \(cached)")
                    #expect(try await metric("replay_postgres_cached_conflicts_total") == 0)

                    try await TestPostgres.psql(url, "UPDATE streams SET terminal = 'completed', terminal_at = '2026-11-26T00:00:00.000Z' WHERE name = 'solo'")
                    guard case .failure(let refusal) = try await client.tryPublish("solo", "late") else {
                        throw TestFailure("a publish to a stream closed behind the daemon's back was taken")
                    }
                    #expect(refusal.code == .terminated, "\(refusal)")
                    #expect(try await metric("replay_postgres_cached_conflicts_total") == 1)
                }
                #expect(try await TestPostgres.psql(url, "SELECT last_seq, terminal FROM streams WHERE name = 'solo'") == "20|completed")
                #expect(try await TestPostgres.psql(url, "SELECT count(*) FROM event_log") == "20")
            }
        }
    }

    /// A stream one daemon only appends to is learned by the other from each commit's
    /// notice, which carries its new bounds, without a read of its row per commit; and
    /// what it learns is what is stored. (The stream's creation is read from its row, and
    /// the second daemon learns it before the other 19 commits: had it read that row late,
    /// after some of them, their notices would be older than what it knows, and those are
    /// read from the row too.)
    @Test func anotherDaemonLearnsAppendsFromTheNoticeWithoutReadingTheRow() async throws {
        try await TestPostgres.withDatabase { url in
            try await withTwoDaemons(on: url, arguments: ["--http", "127.0.0.1:0"]) { first, second in
                let onSecond = try await ReplayClient.connect(to: second.socketPath)
                try await withWireClient(first.socketPath) { client async throws in
                    #expect(try await client.tryPublish("solo", "e1") == .success(1))
                    try await eventually("the second daemon to learn the stream") { (try? await onSecond.info("solo").lastSeq) == 1 }
                    for index in 2...20 {
                        #expect(try await client.tryPublish("solo", "e\(index)") == .success(UInt64(index)))
                    }
                }
                try await eventually("the second daemon to learn the 20th event") { try await onSecond.info("solo").lastSeq == 20 }
                #expect(try await onSecond.info("solo").bytes == (1...20).reduce(0) { $0 + "e\($1)".utf8.count })
                let http = try HTTPTestClient(address: try await second.httpAddress())
                let fromNotices = try await metricValue(#"replay_postgres_refreshes_total{from="notice"}"#, from: http)
                let fromRows = try await metricValue(#"replay_postgres_refreshes_total{from="row"}"#, from: http)
                #expect(fromNotices >= 15, "\(fromNotices)")
                #expect(fromRows <= 3, "only the stream's creation is read: \(fromRows)")
                try await withWireClient(second.socketPath) { reader in
                    try await reader.subscribe("solo", sid: "r")
                    #expect(try await reader.events(20).map(\.1) == (1...20).map { "e\($0)" })
                }
                await onSecond.close()
            }
        }
    }
}

/// A value on a daemon's `/metrics` (0 if it is not there).
func metricValue(_ name: String, from http: HTTPTestClient) async throws -> Double {
    let text = try await http.request("GET", "/metrics").text
    let line = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
    return line.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
}

/// Lines in a file (0 if there is none).
func lineCount(_ path: String) -> Int {
    ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").count
}

/// Two daemons on a new database of the test PostgreSQL server (or on `url`).
func withTwoDaemons(on url: String? = nil, arguments: [String] = [], _ body: (TestDaemon, TestDaemon) async throws -> Void) async throws {
    if url == nil {
        return try await TestPostgres.withDatabase { url in try await withTwoDaemons(on: url, arguments: arguments, body) }
    }
    let url = url!
    do {
        try await withTemporaryDirectory { directory in
            let first = try await TestDaemon.start(in: directory, arguments: arguments, database: url, socket: directory + "/first.sock")
            let second: TestDaemon
            do {
                second = try await TestDaemon.start(in: directory, arguments: arguments, database: url, socket: directory + "/second.sock")
            } catch {
                await first.stop()
                throw error
            }
            do {
                try await body(first, second)
            } catch {
                Issue.record(
                    "the daemons' state and logs:\n\(await TestDaemon.stateDump(socketPath: first.socketPath))\n\(await TestDaemon.stateDump(socketPath: second.socketPath))\n\(first.log.suffix(3000))\n\(second.log.suffix(3000))"
                )
                await first.stop(SIGKILL)
                await second.stop(SIGKILL)
                throw error
            }
            // A daemon the test killed is not asked to stop cleanly.
            for daemon in [first, second] where daemon.isRunning {
                #expect(await daemon.stop() == 0, "\(daemon.log)")
            }
        }
    }
}

extension WireClient {
    /// Publishes one event; its sequence number, or the error the daemon answered.
    func tryPublish(_ stream: String, _ payload: String) async throws -> Result<UInt64, ReplayError> {
        try await send(.publish(stream: stream, payload: ByteBuffer(string: payload)))
        switch try await expectFrame() {
        case .published(let sequence): return .success(sequence)
        case .error(let error): return .failure(error)
        case let other: throw TestFailure("PUB answered \(other)")
        }
    }
}
