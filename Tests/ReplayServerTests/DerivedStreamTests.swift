import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplaySync
import ReplayTesting
import Testing

/// Derived streams against the real daemon: exactly once through SIGKILLs, the articles'
/// connect modes, refused programs, and each error policy.
@Suite("Derived streams", .timeLimit(.minutes(4)))
struct DerivedStreamTests {
    static func payloads(_ range: ClosedRange<Int>) -> [Data] {
        range.map { Data(#"{"id":\#($0),"customer":"c\#($0 % 7)","amount":\#(($0 * 37) % 200)}"#.utf8) }
    }

    /// The next ids to publish, shared with a publishing task.
    final class Counter: Sendable {
        private let next: Locked<Int>
        init(_ first: Int) { next = Locked(first) }
        func take(_ count: Int) -> Int {
            next.withLock { next in
                defer { next += count }
                return next
            }
        }
    }

    static func read(_ client: ReplayClient, _ stream: String, count: Int) async throws -> [ReplayEvent] {
        guard count > 0 else { return [] }
        var events: [ReplayEvent] = []
        for try await event in try await client.subscribe(stream) {
            events.append(event)
            if events.count == count { break }
        }
        return events
    }

    static func read(from client: ReplayClient, _ stream: String, from start: UInt64, filter: String, count: Int) async throws -> [ReplayEvent] {
        var events: [ReplayEvent] = []
        for try await event in try await client.subscribe(stream, from: .from(start), filter: filter) {
            events.append(event)
            if events.count == count { break }
        }
        return events
    }

    static func derivation(_ client: ReplayClient, _ stream: String) async throws -> DerivationDescription? {
        try await client.derivations().first { $0.stream == stream }
    }

    static func sql(_ database: String, _ query: String) async throws -> String {
        let result = try await runProgram("/usr/bin/env", ["sqlite3", database, query])
        guard result.status == 0 else { throw TestFailure("sqlite3: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// SIGKILL three times while two derivations compute and a publisher appends to their
    /// input: after the last restart their outputs are what an offline computation of the
    /// stored input gives, none twice, none missing, and each records the input event it
    /// came from.
    @Test func threeSIGKILLsDuringADerivationLeaveEveryOutputExactlyOnce() async throws {
        try await withTemporaryDirectory { directory in
            var daemon = try await TestDaemon.start(in: directory)
            do {
                let client = try await ReplayClient.connect(to: daemon.socketPath)
                try await client.create("orders", unlimited: true)
                _ = try await client.publish("orders", contentsOf: Self.payloads(1...5_000))
                // Made slow on purpose (a list built and dropped per event), so that a kill always
                // finds it with input left to compute, however busy the machine.
                let slow = "([range(300)] | length) as $n | select(.amount > 100) | {id, amount}"
                try await client.derive("big", DerivationSpec(inputs: ["orders"], program: slow), capacity: .unlimited)
                try await client.derive(
                    "totals", DerivationSpec(inputs: ["orders"], program: ".state[.event.customer] += .event.amount | .state", scan: "{}"),
                    capacity: .count(1))
                await client.close()
            }
            let next = Counter(5_001)
            var killedWithWorkLeft = 0
            for round in 1...3 {
                let socket = daemon.socketPath
                // Appends until the kill cuts it off: what was stored is read back below.
                let publisher = Task {
                    let client = try await ReplayClient.connect(to: socket)
                    while !Task.isCancelled {
                        let first = next.take(2_000)
                        _ = try await client.publish("orders", contentsOf: Self.payloads(first...(first + 1_999)))
                    }
                }
                let client = try await ReplayClient.connect(to: daemon.socketPath)
                let before = try await Self.derivation(client, "big")?.processed ?? 0
                // Killed as soon as it is seen computing with a thousand input events left to
                // compute (the publisher adds two thousand at a time): a lag of one could be
                // computed between the look and the kill, which a busy machine showed.
                try await eventually(within: 60, "round \(round): the derivation computes, behind its input") {
                    guard let big = try await Self.derivation(client, "big") else { return false }
                    return big.processed > before && big.lag >= 1_000
                }
                #expect(await daemon.stop(SIGKILL) == SIGKILL)
                publisher.cancel()
                _ = await publisher.result
                await client.close()
                // What the derivation had committed, against what its input holds.
                let computed = try await Self.sql(
                    daemon.databasePath,
                    "SELECT json_extract(d.positions, '$.orders') FROM derivations AS d JOIN streams AS s ON s.id = d.stream_id WHERE s.name = 'big'")
                let stored = try await Self.sql(daemon.databasePath, "SELECT last_seq FROM streams WHERE name = 'orders'")
                if let computed = Int(computed), let stored = Int(stored), computed < stored { killedWithWorkLeft += 1 }
                daemon = try await TestDaemon.start(in: directory)
            }
            #expect(killedWithWorkLeft >= 1, "every kill came after the derivations had caught up")

            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let stored = try await client.info("orders").lastSeq
            try await eventually(within: 120, "both derivations catch up") {
                let all = try await client.derivations()
                return all.count == 2 && all.allSatisfy { $0.lag == 0 && $0.positions["orders"] == stored }
            }
            // The offline computation, from the input as stored.
            let orders = try await Self.read(client, "orders", count: Int(stored))
            var expected: [String] = []
            var totals: [String: Int] = [:]
            for order in orders {
                let object = try JSONSerialization.jsonObject(with: order.payload) as! [String: Any]
                let (id, amount, customer) = (object["id"] as! Int, object["amount"] as! Int, object["customer"] as! String)
                if amount > 100 { expected.append(#"{"id":\#(id),"amount":\#(amount)}"#) }
                totals[customer, default: 0] += amount
            }
            let big = try await Self.read(client, "big", count: expected.count)
            #expect(big.map { $0.text ?? "" } == expected)
            #expect(big.map(\.sequence) == Array(1...UInt64(expected.count)))
            let last = try await Self.read(client, "totals", count: 1)
            #expect(try JSONSerialization.jsonObject(with: last[0].payload) as? [String: Int] == totals)
            #expect(last[0].sequence == stored)
            await client.close()
            await daemon.stop()

            // Each output names its input event; no input event made two outputs.
            let database = daemon.databasePath
            #expect(try await Self.sql(database, "SELECT count(*) FROM derived_events WHERE stream = 'big'") == "\(expected.count)")
            #expect(try await Self.sql(database, "SELECT count(DISTINCT origin_seq) FROM derived_events WHERE stream = 'big'") == "\(expected.count)")
            let firstOrigin = orders.first { ((try? JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])?["amount"] as? Int ?? 0) > 100 }
            #expect(
                try await Self.sql(database, "SELECT origin_stream || ' ' || origin_seq FROM derived_events WHERE stream = 'big' AND seq = 1")
                    == "orders \(firstOrigin?.sequence ?? 0)")
        }
    }

    /// replayLazily: nothing is computed before the first subscriber (the eager twin,
    /// defined at the same time, has computed everything), then it goes on, also after a
    /// restart.
    @Test func aLazyDerivationComputesNothingBeforeItsFirstSubscriber() async throws {
        try await withTemporaryDirectory { directory in
            var daemon = try await TestDaemon.start(in: directory)
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("orders", contentsOf: Self.payloads(1...50))
            try await client.derive("lazy", DerivationSpec(inputs: ["orders"], program: ".id", connect: .lazy))
            try await client.derive("eager", DerivationSpec(inputs: ["orders"], program: ".id"))
            try await eventually("the eager twin computes") { (try await Self.derivation(client, "eager")?.processed ?? 0) == 50 }
            #expect(try await Self.derivation(client, "lazy")?.status == .waiting)
            #expect(try await Self.sql(daemon.databasePath, "SELECT count(*) FROM derived_events WHERE stream = 'lazy'") == "0")

            let first = try await Self.read(client, "lazy", count: 50)
            #expect(first.map { $0.text ?? "" } == (1...50).map(String.init))
            await client.close()
            await daemon.stop()

            // Connected once, it computes after a restart without a subscriber.
            daemon = try await TestDaemon.start(in: directory)
            let again = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await again.publish("orders", contentsOf: Self.payloads(51...60))
            try await eventually("the lazy derivation goes on") { (try await Self.derivation(again, "lazy")?.processed ?? 0) == 60 }
            await again.close()
            await daemon.stop()
        }
    }

    /// autoconnect: it computes while someone subscribes; events published while nobody
    /// did are computed when someone subscribes again, none skipped.
    @Test func aRefcountDerivationCatchesUpAfterAPause() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("orders", contentsOf: Self.payloads(1...10))
            try await client.derive("shared", DerivationSpec(inputs: ["orders"], program: ".id", connect: .refcount))
            try await client.derive("control", DerivationSpec(inputs: ["orders"], program: ".id"))
            #expect(try await Self.read(client, "shared", count: 10).map { $0.text ?? "" } == (1...10).map(String.init))
            try await eventually("the subscriber has left") { try await Self.derivation(client, "shared")?.status == .waiting }

            _ = try await client.publish("orders", contentsOf: Self.payloads(11...20))
            try await eventually("the eager control computes") { (try await Self.derivation(client, "control")?.processed ?? 0) == 20 }
            let paused = try await Self.derivation(client, "shared")
            #expect(paused?.processed == 10)
            #expect(paused?.lag == 10)

            let all = try await Self.read(client, "shared", count: 20)
            #expect(all.map { $0.text ?? "" } == (1...20).map(String.init))
            await client.close()
        }
    }

    /// A `--config` declaration defines a derived stream at the first start, changes nothing
    /// at the next, recomputes it when its definition changed with `rebuild`, and stops the
    /// start when it changed without.
    @Test func aConfigDeclaresADerivedStreamAndRebuildsItWhenItChanges() async throws {
        try await withTemporaryDirectory { directory in
            let config = directory + "/replay.json"
            func declare(_ program: String, rebuild: Bool) throws {
                let text =
                    #"{"streams": [{"name": "orders", "capacity": -1}], "derived": [{"name": "big", "inputs": ["orders"], "program": "\#(program)", "rebuild": \#(rebuild)}]}"#
                try text.write(toFile: config, atomically: true, encoding: .utf8)
            }
            try declare("select(.amount > 100) | .id", rebuild: false)
            var daemon = try await TestDaemon.start(in: directory, arguments: ["--config", config])
            var client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("orders", contentsOf: Self.payloads(1...10))
            try await eventually("it computes") { (try await Self.derivation(client, "big")?.processed ?? 0) == 10 }
            #expect(try await Self.read(client, "big", count: 5).map { $0.text ?? "" } == ["3", "4", "5", "9", "10"])
            await client.close()
            await daemon.stop()

            // The same declaration again: nothing recomputed.
            daemon = try await TestDaemon.start(in: directory, arguments: ["--config", config])
            client = try await ReplayClient.connect(to: daemon.socketPath)
            #expect(try await client.info("big").lastSeq == 5)
            #expect(try await Self.derivation(client, "big")?.processed == 10)
            await client.close()
            await daemon.stop()

            // Changed with rebuild: the old outputs go, the numbering goes on.
            try declare(".id", rebuild: true)
            daemon = try await TestDaemon.start(in: directory, arguments: ["--config", config])
            client = try await ReplayClient.connect(to: daemon.socketPath)
            let rebuilt = try await Self.read(client, "big", count: 10)
            #expect(rebuilt.map { $0.text ?? "" } == (1...10).map(String.init))
            #expect(rebuilt.first?.sequence == 6)
            await client.close()
            await daemon.stop()

            // Changed without: the daemon does not start, and says why.
            try declare(".amount", rebuild: false)
            let refused = try await TestDaemon.launch(in: directory, arguments: ["--config", config])
            #expect(await refused.waitForExit() != 0)
            let log = try String(contentsOfFile: refused.logPath, encoding: .utf8)
            #expect(log.contains("--rebuild"), "\(log)")
        }
    }

    /// Each bad definition is refused with its reason, and nothing is created.
    @Test func badProgramsAreRefusedWithTheirMessage() async throws {
        try await withDaemon { daemon in
            let replayctl = try builtExecutable("replayctl")
            let cases: [([String], String)] = [
                (["--jq", ".a | | .b"], "syntax error"),
                (["--jq", "nosuch(1)"], "nosuch/1 is not defined"),
                (["--jq", "{t: now}"], "uses 'now', which reads the clock"),
                (["--jq", "$ENV.HOME"], "uses '$ENV'"),
                (["--jq", ".", "--scan", "{not json"], "--scan takes the initial state as JSON"),
                (["--jq", ".", "--window", "1m"], "--window folds with --scan"),
                (["--jq", ".", "--on-error", "explode"], "--on-error is skip, stop or dead-letter"),
            ]
            for (flags, message) in cases {
                let result = try await runProgram(replayctl, ["derive", "out", "--from", "orders"] + flags + ["--socket", daemon.socketPath])
                #expect(result.status != 0, "\(flags)")
                #expect(result.stderr.contains(message), "\(flags): \(result.stderr)")
            }
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            #expect(try await client.list().isEmpty)
            #expect(try await client.derivations().isEmpty)
            _ = try await client.publish("orders", "{}")
            // Only its derivation appends to a derived stream.
            try await client.derive("copy", DerivationSpec(inputs: ["orders"], program: "."))
            let refused = await #expect(throws: ReplayClientError.self) { _ = try await client.publish("copy", "{}") }
            #expect("\(refused.map { "\($0)" } ?? "")".contains("only its derivation appends to it"))
            // A derived stream cannot read itself, and a plain stream is not made derived.
            await #expect(throws: ReplayClientError.self) { try await client.derive("loop", DerivationSpec(inputs: ["loop"], program: ".")) }
            try await client.create("plain")
            await #expect(throws: ReplayClientError.self) { try await client.derive("plain", DerivationSpec(inputs: ["orders"], program: ".")) }
            await client.close()
        }
    }

    /// skip counts a failing event and goes on; stop stops with the reason; dead-letter
    /// keeps the event and the error in its stream.
    @Test func eachErrorPolicyBehavesAsDescribed() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("in", contentsOf: [#"{"n":1}"#, "not json", #"{"n":"x"}"#, #"{"n":4}"#].map { Data($0.utf8) })
            let program = ".n + 1"
            try await client.derive("skipping", DerivationSpec(inputs: ["in"], program: program, onError: .skip))
            try await client.derive("stopping", DerivationSpec(inputs: ["in"], program: program, onError: .stop))
            try await client.derive("lettering", DerivationSpec(inputs: ["in"], program: program, onError: .deadLetter("in-errors")))
            try await eventually("the three derivations decide") {
                let all = try await client.derivations()
                return all.count == 3 && all.allSatisfy { $0.status == .stopped || $0.processed == 4 }
            }
            let skipping = try await Self.derivation(client, "skipping")
            #expect(skipping?.errors == 2)
            #expect(skipping?.status == .running)
            #expect(try await Self.read(client, "skipping", count: 2).map { $0.text ?? "" } == ["2", "5"])

            let stopping = try await Self.derivation(client, "stopping")
            #expect(stopping?.status == .stopped)
            #expect(stopping?.error?.contains("in seq 2: the event is not JSON") == true, "\(stopping?.error ?? "")")
            #expect(stopping?.positions["in"] == 1)
            #expect(try await client.info("stopping").lastSeq == 1)

            #expect(try await Self.read(client, "lettering", count: 2).map { $0.text ?? "" } == ["2", "5"])
            let letters = try await Self.read(client, "in-errors", count: 2)
            let second = try JSONSerialization.jsonObject(with: letters[1].payload) as? [String: Any]
            #expect(second?["seq"] as? Int == 3)
            #expect(second?["event"] as? String == #"{"n":"x"}"#)
            #expect((second?["error"] as? String)?.contains("cannot be added") == true)
            await client.close()
        }
    }

    /// A backlog in one page is computed by the runner and its helper thread in chunks
    /// (`ComputeHelper`): skip, distinct, take and the dead-letter policy still see every
    /// event's outputs in input order, as an offline computation on one thread does.
    @Test func aBacklogComputedOnTwoThreadsGivesWhatOneThreadWould() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let count = 3_000
            let payloads = (1...count).map { n in Data((n % 211 == 0 ? "not json \(n)" : #"{"n":\#(n)}"#).utf8) }
            _ = try await client.publish("in", contentsOf: payloads)
            // 0, 1 or 2 outputs per event, runs of equal ones, and failures.
            let program = #".n as $n | if $n % 101 == 0 then error("n is \($n)") else range($n % 3) | {k: ($n / 10 | floor)} end"#
            let (skip, take) = (7, 250)
            try await client.derive(
                "out",
                DerivationSpec(
                    inputs: ["in"], program: program, take: UInt64(take), skip: UInt64(skip), distinct: true, onError: .deadLetter("in-errors")))
            var expected: [String] = []
            var letters: [UInt64] = []
            var (skipped, last) = (0, "")
            events: for n in 1...count {
                if n % 211 == 0 || n % 101 == 0 {
                    letters.append(UInt64(n))
                    continue
                }
                for _ in 0..<(n % 3) {
                    let text = #"{"k":\#(n / 10)}"#
                    if skipped < skip {
                        skipped += 1
                        continue
                    }
                    if text == last { continue }
                    last = text
                    expected.append(text)
                    if expected.count == take { break events }
                }
            }
            #expect(try await Self.read(client, "out", count: take).map { $0.text ?? "" } == expected)
            let lettered = try await Self.read(client, "in-errors", count: letters.count).map {
                (try? JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])?["seq"] as? Int ?? 0
            }
            #expect(lettered.map(UInt64.init) == letters)
            try await eventually("the derived stream completes at its take") { try await client.info("out").terminal != nil }
            #expect(try await client.info("out").lastSeq == UInt64(take))
            await client.close()
        }
    }

    /// A backlog of several pages, each shared by the runner and its helper, where some
    /// steps fill before their page ends and the take ends one midway: the outputs are
    /// exactly one thread's.
    @Test func aBacklogOfSeveralPagesGivesWhatOneThreadWould() async throws {
        try await withDaemon(arguments: ["--default-capacity", "unlimited"]) { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            // Three pages of 4,096 and a part.
            let count = 13_000
            _ = try await client.publish("in", contentsOf: (1...count).map { n in Data(#"{"n":\#(n)}"#.utf8) })
            // Up to two outputs an event, so that some steps fill before their page ends.
            let program = #".n as $n | if $n % 997 == 0 then error("n is \($n)") else range($n % 3) | {n: $n, i: .} end"#
            let (skip, take) = (5, 10_000)
            try await client.derive("out", DerivationSpec(inputs: ["in"], program: program, take: UInt64(take), skip: UInt64(skip), onError: .skip))
            var expected: [String] = []
            events: for n in 1...count where n % 997 != 0 {
                for i in 0..<(n % 3) {
                    expected.append(#"{"n":\#(n),"i":\#(i)}"#)
                    if expected.count == skip + take { break events }
                }
            }
            expected.removeFirst(skip)
            #expect(try await Self.read(client, "out", count: take).map { $0.text ?? "" } == expected)
            try await eventually("the derived stream completes at its take") { try await client.info("out").terminal != nil }
            #expect(try await client.info("out").lastSeq == UInt64(take))
            await client.close()
        }
    }

    /// A program that loops, or grows without bound, on one event is cut off by the
    /// daemon's budget: that event is a runtime error under the policy, the derivation goes
    /// on, and so does a reader whose filter does the same. The time limit is long enough
    /// that the growing program passes its memory limit first, however loaded the machine.
    @Test func aProgramPastItsBudgetOnOneEventCostsOnlyThatEvent() async throws {
        try await withDaemon(arguments: ["--jq-time-limit", "2", "--jq-memory-limit", "16"]) { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("in", contentsOf: (1...4).map { Data(#"{"n":\#($0)}"#.utf8) })
            let program = #"if .n == 2 then (def f: f; f) elif .n == 3 then [range(1e10)] else .n end"#
            try await client.derive("out", DerivationSpec(inputs: ["in"], program: program, onError: .deadLetter("in-errors")))
            #expect(try await Self.read(client, "out", count: 2).map { $0.text ?? "" } == ["1", "4"])
            let letters = try await Self.read(client, "in-errors", count: 2).map {
                (try? JSONSerialization.jsonObject(with: $0.payload) as? [String: Any])?["error"] as? String ?? ""
            }
            #expect(letters == ["the program ran past its time limit of 2 s on one event", "the program grew past its memory limit of 16 MB on one event"])
            let filtered = try await Self.read(from: client, "in", from: 1, filter: program, count: 2)
            #expect(filtered.map(\.sequence) == [1, 4])
            #expect(try await Self.derivation(client, "out")?.errors == 2)
            await client.close()
        }
    }
}

/// Read-time filters on the socket: a per-reader projection, nothing stored, sequence
/// numbers the stream's.
@Suite("Read-time filters")
struct ReadFilterTests {
    @Test func aFilteredReaderGetsTheOutputsUnderTheStreamsSequenceNumbers() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("orders", contentsOf: DerivedStreamTests.payloads(1...10))
            // Catch-up from the store and live from the tail ring go through the same filter.
            let expected = (1...20).filter { ($0 * 37) % 200 > 100 }
            var received: [(UInt64, String)] = []
            for try await event in try await client.subscribe("orders", filter: "select(.amount > 100) | .id") {
                received.append((event.sequence, event.text ?? ""))
                if received.count == 3 { _ = try await client.publish("orders", contentsOf: DerivedStreamTests.payloads(11...20)) }
                if received.count == expected.count { break }
            }
            #expect(received.map(\.0) == expected.map(UInt64.init))
            #expect(received.map(\.1) == expected.map(String.init))
            // Resuming from a sequence number: where a filtered reader was.
            let resumed = try await DerivedStreamTests.read(from: client, "orders", from: UInt64(expected[4]), filter: ".id", count: 1)
            #expect(resumed.map(\.sequence) == [UInt64(expected[4])])
            // Nothing was stored.
            #expect(try await client.list().map(\.name) == ["orders"])
            await client.close()
        }
    }

    @Test func aFilterIsRefusedAsADerivationsProgramWouldBe() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { wire in
                try await wire.send(.filtered(.subscribe(stream: "orders", sid: "s1", start: .all), program: "{t: now}"))
                guard case .error(let error) = try await wire.expectFrame() else { throw TestFailure("expected -ERR") }
                #expect(error.message.contains("uses 'now'"), "\(error.message)")
                // The id is free again, and the connection goes on.
                try await wire.send(.filtered(.subscribe(stream: "orders", sid: "s1", start: .all), program: ".a | | .b"))
                guard case .error(let syntax) = try await wire.expectFrame() else { throw TestFailure("expected -ERR") }
                #expect(syntax.message.contains("syntax error"), "\(syntax.message)")
                try await wire.send(.ping)
                #expect(try await wire.expectFrame() == .pong)
            }
            let replayctl = try builtExecutable("replayctl")
            _ = try await runProgram(replayctl, ["send", "prices", #"{"p":1}"#, #"{"p":2}"#, "--socket", daemon.socketPath])
            let result = try await runProgram(replayctl, ["subscribe", "prices", "--filter", ".p * 10", "--count", "2", "--socket", daemon.socketPath])
            #expect(result.stdout == "10\n20\n", "\(result.stdout)\(result.stderr)")
        }
    }
}

/// One derivation, two daemons on one PostgreSQL database: one computes it, the other
/// stands by and takes over when the first is killed, and every output exists once.
@Suite("Derived streams on a shared PostgreSQL", .timeLimit(.minutes(3)))
struct SharedDerivationTests {
    @Test func oneDaemonComputesItAndTheOtherTakesOverWhenItDies() async throws {
        try await withTwoDaemons { first, second in
            let one = try await ReplayClient.connect(to: first.socketPath)
            let two = try await ReplayClient.connect(to: second.socketPath)
            _ = try await one.publish("orders", contentsOf: DerivedStreamTests.payloads(1...2_000))
            try await one.derive("big", DerivationSpec(inputs: ["orders"], program: "select(.amount > 100) | .id"), capacity: .unlimited)
            try await eventually("one daemon computes, the other stands by") {
                let statuses = [try await DerivedStreamTests.derivation(one, "big")?.status, try await DerivedStreamTests.derivation(two, "big")?.status]
                return Set(statuses) == [.running, .standby]
            }
            let (computing, standing) =
                try await DerivedStreamTests.derivation(one, "big")?.status == .running ? (first, second) : (second, first)
            let survivor = computing === first ? two : one
            // The one computing dies while publishers keep the input growing.
            let publisher = Task {
                let client = try await ReplayClient.connect(to: standing.socketPath)
                for batch in 0..<5 {
                    let first = 2_001 + batch * 1_000
                    _ = try await client.publish("orders", contentsOf: DerivedStreamTests.payloads(first...(first + 999)))
                }
                await client.close()
            }
            try await Task.sleep(for: .milliseconds(50))
            #expect(await computing.stop(SIGKILL) == SIGKILL)
            try await publisher.value
            try await eventually(within: 60, "the survivor takes over and catches up") {
                guard let big = try await DerivedStreamTests.derivation(survivor, "big") else { return false }
                return big.status == .running && big.positions["orders"] == 7_000
            }
            let expected = (1...7_000).filter { ($0 * 37) % 200 > 100 }
            let outputs = try await DerivedStreamTests.read(survivor, "big", count: expected.count)
            #expect(outputs.map { $0.text ?? "" } == expected.map(String.init))
            #expect(try await survivor.info("big").lastSeq == UInt64(expected.count), "no output twice")
            await one.close()
            await two.close()
        }
    }
}
