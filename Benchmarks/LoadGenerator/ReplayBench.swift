import ArgumentParser
import Foundation

/// replay-bench: the service measured end to end over its Unix socket, side by side with
/// Redis Streams (appendfsync always) through the same client code path.
@main
struct ReplayBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay-bench",
        abstract: "Load-test replayd over its socket, and Redis Streams the same way.")

    @Option(help: "replay, redis, or both (side by side, with the ratio replay/redis).")
    var against: String = "both"
    @Option(help: "The replayd binary.") var replayd: String = "../.build/release/replayd"
    @Option(name: .customLong("redis-server"), help: "The redis-server binary.") var redisServer: String = "/usr/bin/redis-server"
    @Option(name: .customLong("payload-size"), help: "Bytes per event.") var payloadSize: Int = 100
    @Option(help: "replayd's durability: full (the match for appendfsync always) or normal.") var sync: String = "full"
    @Option(help: "Scale the event counts (1 = the full runs; 0.1 for a quick look).") var scale: Double = 1
    @Option(help: "Scenarios to run (comma-separated): publish-seq, publish-pipelined, catch-up, fan-out, restart-memory.")
    var scenarios: String = "publish-seq,publish-pipelined,catch-up,fan-out,restart-memory"

    func run() throws {
        let systems = against == "both" ? ["replay", "redis"] : [against]
        var results: [String: [Figure]] = [:]
        for name in systems {
            let directory = NSTemporaryDirectory() + "/replay-bench-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let system: any SystemUnderTest = name == "redis"
                ? try RedisSystem(redisServer: redisServer, directory: directory)
                : try ReplaySystem(replayd: replayd, directory: directory, durability: sync)
            defer { system.stop() }
            let run = Scenarios(system: system, payloadSize: payloadSize, scale: scale)
            var figures: [Figure] = []
            for scenario in scenarios.split(separator: ",") {
                switch scenario {
                case "publish-seq": figures += try run.publishSequential()
                case "publish-pipelined": figures += [try run.publishPipelined(connections: 1), try run.publishPipelined(connections: 8)]
                case "catch-up": figures += try run.catchUp()
                case "fan-out": figures += try run.fanOut(subscribers: 10) + run.fanOut(subscribers: 100)
                case "restart-memory": figures += try run.restartAndMemory()
                default: throw ValidationError("unknown scenario \(scenario)")
                }
                for figure in figures where !(results[name] ?? []).contains(where: { $0.scenario == figure.scenario }) {
                    print(Self.json(figure))
                    results[name, default: []].append(figure)
                }
            }
        }
        print(Self.table(results))
    }

    static func json(_ figure: Figure) -> String {
        var object: [String: Any] = [
            "scenario": figure.scenario, "system": figure.system, "value": (figure.value * 10).rounded() / 10,
            "unit": figure.unit, "server_rss_bytes": figure.serverRSS,
        ]
        if let p50 = figure.p50 { object["p50_us"] = (p50 * 10).rounded() / 10 }
        if let p99 = figure.p99 { object["p99_us"] = (p99 * 10).rounded() / 10 }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func table(_ results: [String: [Figure]]) -> String {
        let replay = results["replay"] ?? []
        let redis = results["redis"] ?? []
        let header = ["scenario".padding(toLength: 34, withPad: " ", startingAt: 0), "replay".padding(toLength: 28, withPad: " ", startingAt: 0),
                      "redis".padding(toLength: 28, withPad: " ", startingAt: 0), "replay/redis   replay p50/p99 µs   redis p50/p99 µs"]
        var lines = [header.joined()]
        for scenario in (replay.isEmpty ? redis : replay).map(\.scenario) {
            let a = replay.first { $0.scenario == scenario }
            let b = redis.first { $0.scenario == scenario }
            func value(_ f: Figure?) -> String { f.map { String(format: "%.0f %@", $0.value, $0.unit) } ?? "-" }
            func latency(_ f: Figure?) -> String { f?.p50.map { String(format: "%.0f / %.0f", $0, f?.p99 ?? 0) } ?? "" }
            let ratio = (a != nil && b != nil) ? String(format: "%.2f×", a!.value / b!.value) : ""
            lines.append(scenario.padding(toLength: 34, withPad: " ", startingAt: 0)
                + value(a).padding(toLength: 28, withPad: " ", startingAt: 0)
                + value(b).padding(toLength: 28, withPad: " ", startingAt: 0)
                + ratio.padding(toLength: 15, withPad: " ", startingAt: 0)
                + latency(a).padding(toLength: 20, withPad: " ", startingAt: 0) + latency(b))
        }
        return lines.joined(separator: "\n")
    }
}
