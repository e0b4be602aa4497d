import ArgumentParser
import Foundation

/// replay-bench: the service measured end to end over its Unix socket, side by side with
/// Redis Streams (appendfsync always) through the same client code path.
@main
struct ReplayBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay-bench",
        abstract: "Load-test replayd over its socket, and Redis Streams the same way.")

    @Option(
        help:
            "replay, redis, replay-http (replay read over its Durable Streams HTTP front door), replay-pg (two replayd on one PostgreSQL database, see --postgres), ds-url (any Durable Streams server, see --ds-url; publish-http only), a comma-separated list, or both (replay,redis). The ratio is the first system's over the second's."
    )
    var against: String = "both"
    @Option(help: "The replayd binary.") var replayd: String = "../.build/release/replayd"
    @Option(
        help:
            "Another replayd binary (an earlier commit's), run as the systems named with '@baseline' (replay@baseline, replay-http@baseline): before and after take turns in one run."
    )
    var baseline: String?
    @Option(help: "For replay-pg: a PostgreSQL server's URL (each run gets a new database on it; tools/postgres-cluster.sh starts one).")
    var postgres: String = ProcessInfo.processInfo.environment["REPLAY_TEST_POSTGRES"] ?? ""
    @Option(name: .customLong("ds-url"), help: "For ds-url: any Durable Streams server, http://HOST:PORT (refserver.sh PORT starts the reference server).")
    var dsURL: String = ""
    @Option(name: .customLong("ds-pid"), help: "For ds-url: the server's process id, to report its CPU and memory.")
    var dsPID: Int32?
    @Option(name: .customLong("redis-server"), help: "The redis-server binary.") var redisServer: String = "/usr/bin/redis-server"
    @Option(name: .customLong("payload-size"), help: "Bytes per event.") var payloadSize: Int = 100
    @Option(help: "replayd's durability: full (the match for appendfsync always) or normal.") var sync: String = "full"
    @Option(help: "Scale the event counts (1 = the full runs; 0.1 for a quick look).") var scale: Double = 1
    @Option(
        help:
            "Scenarios to run (comma-separated): publish-seq, publish-pipelined, publish-checks (replay only: x8 plain, expect= and producer), catch-up, fan-out, work-queue (consumer groups against XREADGROUP/XACK), restart-memory, publish-http (replay-http or ds-url: 16 connections of 100-byte POSTs, plain and as idempotent producers), sse-readers (replay-http or ds-url: 10,000 held SSE readers at 100 events/s, then 1,000 of one stream at 1,000/s; each alone as sse-many, sse-hot), derive (replay only: a live map/filter, catch-ups of a backlog by derivations and by an outside worker, duplicates after SIGKILLs), derive-live (its live map/filter alone)."
    )
    var scenarios: String = "publish-seq,publish-pipelined,catch-up,fan-out,work-queue,restart-memory"

    @Option(
        help:
            "Rounds per scenario: the systems take turns within each round (replay, redis, replay, redis…), each on a fresh server, so the disk's moods fall on both alike."
    )
    var rounds: Int = 3
    @Option(
        name: .customLong("sqlite-ceiling"),
        help:
            "tools/sqlite_ceiling.py, run once at the top: SQLite's own insert ceiling in this run ('none': not run, as when the ceiling is measured from C)."
    )
    var sqliteCeiling: String = "tools/sqlite_ceiling.py"

    func run() throws {
        let systems = against == "both" ? ["replay", "redis"] : against.split(separator: ",").map(String.init)
        print("fsync of a 4 KiB write, median of 200 here: \(String(format: "%.0f", try Self.fsyncMicroseconds())) µs")
        let ceiling = Self.storeCeiling(script: sqliteCeiling)
        if let ceiling { print("SQLite ceiling (sqlite_ceiling.py, current schema, 1,000 per transaction): \(Int(ceiling)) events/s") }
        var results: [String: [String: [Figure]]] = [:]  // scenario -> system -> one figure per round
        var order: [String] = []
        for scenario in scenarios.split(separator: ",").map(String.init) {
            // The restart and memory runs load 10 million events: once each is enough.
            let rounds = scenario == "restart-memory" ? 1 : max(1, self.rounds)
            // The guarantees' cost is replay against itself: its variants take turns. HTTP
            // appends plain and as producers each get a fresh server, in the opposite order
            // every other round: run one after the other on one server, the second half met
            // the first's log, and its ratio to the first moved by a tenth from run to run.
            let turns: [(String, String)] =
                switch scenario {
                case "publish-checks": ["checks-plain", "checks-expect", "checks-producer"].map { ($0, "replay") }
                case "publish-http": systems.flatMap { [("http-plain", $0), ("http-producer", $0)] }
                default: systems.map { (scenario, $0) }
                }
            for round in 1...rounds {
                for (scenario, name) in round % 2 == 0 && scenario == "publish-http" ? turns.reversed() : turns {
                    for figure in try measure(scenario, on: name) {
                        if results[figure.scenario] == nil { order.append(figure.scenario) }
                        results[figure.scenario, default: [:]][name, default: []].append(figure)
                        print(Self.json(figure, round: round))
                    }
                }
            }
        }
        print(Self.table(results, order: order, systems: systems))
        if let ceiling, let pipelined = results["publish-pipelined x8"]?["replay"], !pipelined.isEmpty {
            let median = Self.median(pipelined.map(\.value))
            print(String(format: "publish-pipelined x8 is %.0f%% of the store's own ceiling measured in this run", median / ceiling * 100))
        }
    }

    /// One scenario on a fresh server of `name`.
    func measure(_ scenario: String, on name: String) throws -> [Figure] {
        let directory = NSTemporaryDirectory() + "/replay-bench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var (kind, replayd) = (name, self.replayd)
        if name.hasSuffix("@baseline") {
            guard let baseline else { throw ValidationError("\(name) needs --baseline <replayd>") }
            (kind, replayd) = (String(name.dropLast("@baseline".count)), baseline)
        }
        let system: any SystemUnderTest =
            switch kind {
            case "redis": try RedisSystem(redisServer: redisServer, directory: directory)
            case "replay-http": try ReplayHTTPSystem(replayd: replayd, directory: directory, durability: sync, payloadSize: payloadSize)
            case "replay-pg": try ReplayPostgresSystem(replayd: replayd, directory: directory, postgres: postgres, durability: sync)
            case "ds-url": try DurableStreamsURLSystem(url: dsURL, pid: dsPID)
            default: try ReplaySystem(replayd: replayd, directory: directory, durability: sync)
            }
        defer { system.stop() }
        let run = Scenarios(system: system, payloadSize: payloadSize, scale: scale)
        let figures = try measure(scenario, with: run)
        // The server's CPU for the whole scenario: the same work on each system, so the
        // ratio is CPU per event, whatever else the machine was doing.
        let cpu = Figure(scenario: "\(scenario): server CPU", system: name, value: system.cpuSeconds, unit: "CPU s", serverRSS: 0)
        // Named as asked (`replay@baseline`), so that each JSON line says which binary it was.
        return (figures + [cpu]).map { figure in
            var figure = figure
            figure.system = name
            return figure
        }
    }

    private func measure(_ scenario: String, with run: Scenarios) throws -> [Figure] {
        switch scenario {
        case "publish-seq": return try run.publishSequential()
        case "publish-pipelined": return [try run.publishPipelined(connections: 1), try run.publishPipelined(connections: 8)]
        // The guarantees' cost: the same load plain, with expect= and with producer stamps,
        // one stream per connection (expect= needs a sole writer). Redis 7 has neither.
        case "checks-plain": return [try run.publishPipelined(connections: 8, ownStreams: true)]
        case "checks-expect": return [try run.publishPipelined(connections: 8, checks: .expect)]
        case "checks-producer": return [try run.publishPipelined(connections: 8, checks: .producer)]
        case "catch-up": return try run.catchUp()
        case "fan-out": return try run.fanOut(subscribers: 10) + run.fanOut(subscribers: 100)
        case "restart-memory": return try run.restartAndMemory()
        case "work-queue": return try run.workQueue()
        // HTTP appends as `wrk` makes them: 16 keep-alive connections, one POST at a time each.
        case "http-plain": return try run.publishHTTP(connections: 16, producer: false)
        case "http-producer": return try run.publishHTTP(connections: 16, producer: true)
        // Held SSE readers: 10,000 over 100 streams at 100 events/s (`sse-many`), then 1,000
        // readers of one stream at 1,000 events/s (`sse-hot`); `--scale` scales the readers.
        case "sse-readers": return try measure("sse-many", with: run) + measure("sse-hot", with: run)
        case "sse-many": return try run.sseReaders(readers: max(100, Int(10_000 * run.scale)), streams: 100, rate: 100, seconds: 10)
        case "sse-hot": return try run.sseReaders(readers: max(10, Int(1_000 * run.scale)), streams: 1, rate: 1_000, seconds: 10)
        // Derived streams beside plain publishing and an outside worker (replay only).
        case "derive": return try run.derive()
        // Its live half alone, for comparing builds on latency over many rounds.
        case "derive-live": return try run.deriveLiveOnly()
        default: throw ValidationError("unknown scenario \(scenario)")
        }
    }

    /// What one fsync costs on this disk now: the bound of every durable commit.
    static func fsyncMicroseconds() throws -> Double {
        let path = NSTemporaryDirectory() + "/replay-bench-fsync-\(UUID().uuidString)"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw ValidationError("cannot create \(path)") }
        defer { close(fd); unlink(path) }
        let block = [UInt8](repeating: 0x61, count: 4096)
        var samples: [Double] = []
        for _ in 0..<200 {
            _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            let start = now()
            fsync(fd)
            samples.append(Double(now() - start) / 1000)
        }
        return median(samples)
    }

    /// The "current" row at 1,000 events per transaction of tools/sqlite_ceiling.py.
    static func storeCeiling(script: String) -> Double? {
        guard script != "none" else { return nil }
        guard FileManager.default.fileExists(atPath: script) else {
            print("(no \(script) here: the store's ceiling is not measured in this run)")
            return nil
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "--rounds", "1", "--batches", "1000", "--events", "200000"]
        let output = Pipe()
        process.standardOutput = output
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        print(text.split(separator: "\n").map { "  \($0)" }.joined(separator: "\n"))
        let row = text.split(separator: "\n").first { $0.hasPrefix("current") }
        return row.flatMap { Double($0.split(separator: " ").last?.replacingOccurrences(of: ",", with: "") ?? "") }
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    static func json(_ figure: Figure, round: Int) -> String {
        var object: [String: Any] = [
            "scenario": figure.scenario, "system": figure.system, "value": (figure.value * 10).rounded() / 10,
            "unit": figure.unit, "server_rss_bytes": figure.serverRSS, "round": round,
        ]
        if let p50 = figure.p50 { object["p50_us"] = (p50 * 10).rounded() / 10 }
        if let p99 = figure.p99 { object["p99_us"] = (p99 * 10).rounded() / 10 }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// Medians per system, and the ratio of the first system over the second as the median
    /// of the per-round ratios with their min–max (rounds pair a run of the first with the
    /// run of the second after it).
    static func table(_ results: [String: [String: [Figure]]], order: [String], systems: [String]) -> String {
        func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        let shown = Array(systems.prefix(2))
        var header = pad("scenario", 34) + shown.map { pad("\($0) (median)", 24) }.joined()
        if shown.count == 2 { header += pad("\(shown[0])/\(shown[1]) (min–max)", 30) }
        header += shown.map { pad("\($0) p50/p99 µs", 26) }.joined()
        var lines = [header]
        for scenario in order {
            let figures = shown.map { results[scenario]?[$0] ?? [] }
            func value(_ figures: [Figure]) -> String {
                figures.isEmpty ? "-" : String(format: figures[0].unit == "CPU s" ? "%.2f %@" : "%.0f %@", median(figures.map(\.value)), figures[0].unit)
            }
            func latency(_ figures: [Figure]) -> String {
                let p50s = figures.compactMap(\.p50)
                let p99s = figures.compactMap(\.p99)
                return p50s.isEmpty ? "" : String(format: "%.0f / %.0f", median(p50s), median(p99s))
            }
            var line = pad(scenario, 34) + figures.map { pad(value($0), 24) }.joined()
            if figures.count == 2 {
                var ratio = ""
                if !figures[0].isEmpty, figures[0].count == figures[1].count {
                    let ratios = zip(figures[0], figures[1]).map { $0.value / $1.value }
                    ratio = String(format: "%.2f× (%.2f–%.2f)", median(ratios), ratios.min() ?? 0, ratios.max() ?? 0)
                }
                line += pad(ratio, 30)
            }
            line += figures.map { pad(latency($0), 26) }.joined()
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
