import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// deploy/'s Prometheus alert rules and Grafana dashboard read metrics replayd serves:
/// every metric either names appears at /metrics of a real daemon on PostgreSQL with a
/// source, a durable consumer, a consumer group and a derived stream, and each rule's
/// `metric` annotation names exactly the metrics its expression reads.
@Suite("deploy: alert rules and dashboard", .timeLimit(.minutes(3)))
struct MonitoringRulesTests {
    static let deploy = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy").standardized.path

    /// The metrics a PromQL expression reads: replayd's own and the process's.
    static func metrics(in expression: String) -> Set<String> {
        Set(expression.matches(of: /\b(?:replay|process)_[a-z_]+/).map { String($0.output) })
    }

    /// The alert rules, parsed by a YAML parser (PyYAML), as (alert, expr, metric annotation).
    static func rules() async throws -> [(alert: String, expression: String, named: Set<String>)] {
        try await Prerequisite.yaml.require()
        let script = "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)"
        let result = try await runProgram("/usr/bin/env", ["python3", "-c", script, deploy + "/prometheus-alerts.yml"])
        guard result.status == 0 else { throw TestFailure("prometheus-alerts.yml does not parse: \(result.stderr)") }
        let file = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let groups = try #require(file?["groups"] as? [[String: Any]])
        return try groups.flatMap { group in
            try #require(group["rules"] as? [[String: Any]]).map { rule in
                let annotations = rule["annotations"] as? [String: String] ?? [:]
                let named = (annotations["metric"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                return (rule["alert"] as? String ?? "", rule["expr"] as? String ?? "", Set(named))
            }
        }
    }

    /// Every query of every panel of the dashboard.
    static func dashboardExpressions() throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: deploy + "/grafana-dashboard.json"))
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(dashboard["panels"] as? [[String: Any]])
        return panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
    }

    @Test func eachRuleNamesTheMetricsItReads() async throws {
        let rules = try await Self.rules()
        #expect(rules.count >= 7)
        for rule in rules {
            #expect(!rule.expression.isEmpty, "\(rule.alert) has an expression")
            #expect(rule.named == Self.metrics(in: rule.expression), "\(rule.alert)'s metric annotation")
        }
        // What the rules must cover.
        let read = rules.reduce(into: Set<String>()) { $0.formUnion($1.named) }
        for covered in [
            "replay_consumer_lag_events", "replay_group_dead_lettered_events", "replay_ds_webhook_failures_total",
            "replay_commit_duration_seconds_bucket", "process_open_fds", "replay_source_starts", "replay_postgres_connected",
        ] {
            #expect(read.contains(covered), "a rule reads \(covered)")
        }
    }

    @Test func everyMetricTheRulesAndTheDashboardReadIsServed() async throws {
        let wanted = try await Self.rules().reduce(into: Set<String>()) { $0.formUnion(Self.metrics(in: $1.expression)) }
            .union(try Self.dashboardExpressions().flatMap { Self.metrics(in: $0) })
        #expect(wanted.count >= 20)
        try await TestPostgres.withDatabase { url in
            try await withDaemon(arguments: ["--http", "127.0.0.1:0"], database: url) { daemon in
                let http = try HTTPTestClient(address: try await daemon.httpAddress())
                let client = try await ReplayClient.connect(to: daemon.socketPath)
                try await client.create("ticks", source: "echo a; echo b", connect: "eager")
                _ = try await client.publish("in", contentsOf: [Data(#"{"n":1}"#.utf8)])
                try await client.derive("out", DerivationSpec(inputs: ["in"], program: ".n"))
                try await withWireClient(daemon.socketPath) { socket in
                    try await socket.send(.subscribeDurable(stream: "in", sid: "d", start: .all, consumer: "audit"))
                    #expect(try await socket.expectFrame() == .ok)
                    _ = try await socket.events(1)
                    try await socket.send(.subscribeGroup(stream: "in", sid: "w", start: .all, options: GroupOptions(group: "g")))
                    #expect(try await socket.expectFrame() == .ok)
                    _ = try await socket.events(1)
                }
                // The source runs and its stream is written, on the writer's next commits.
                var served = Set<String>()
                try? await eventually("every metric served") {
                    let text = try await http.request("GET", "/metrics").text
                    served = Set(
                        text.split(separator: "\n").filter { !$0.hasPrefix("#") }
                            .map { String($0.prefix { $0 != "{" && $0 != " " }) })
                    return wanted.isSubset(of: served)
                }
                #expect(wanted.subtracting(served).isEmpty, "not at /metrics: \(wanted.subtracting(served).sorted())")
                await client.close()
            }
        }
    }
}
