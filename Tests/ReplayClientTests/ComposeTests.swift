import Foundation
import ReplayTesting
import Testing

/// No Docker engine runs here, so the compose file is checked statically: it parses, and
/// every replayd/replayctl flag it uses exists in the binaries' --help.
@Suite("docker-compose.yml")
struct ComposeTests {
    static let root = ReadmeTests.root

    func compose() async throws -> [String: Any] {
        try await Prerequisite.yaml.require()
        let script = "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)"
        let result = try await runProgram("/usr/bin/env", ["python3", "-c", script, Self.root + "/docker-compose.yml"])
        guard result.status == 0 else { throw TestFailure("docker-compose.yml does not parse: \(result.stderr)") }
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] ?? [:]
    }

    @Test func everyFlagItUsesExists() async throws {
        let services = try #require(try await compose()["services"] as? [String: [String: Any]])
        #expect(Set(services.keys) == ["replayd", "publisher", "subscriber", "postgres", "replayd-a", "replayd-b"])
        for shared in ["replayd-a", "replayd-b"] {
            let command = services[shared]?["command"] as? [String] ?? []
            #expect(command.contains { $0.hasPrefix("postgres://") && $0.hasSuffix("@postgres:5432/replay") }, "\(shared) shares the database")
            #expect(services[shared]?["profiles"] as? [String] == ["postgres"])
        }
        let volumes = services["replayd"]?["volumes"] as? [String] ?? []
        #expect(volumes.contains("./run:/run/replay"), "the socket is in a host-mounted folder")
        #expect(volumes.contains { $0.hasPrefix("replay-data:") }, "the database is in a named volume")

        var invocations: [[String]] = []
        for service in services.values {
            if let command = service["command"] as? [String] { invocations.append(command) }
            if let check = (service["healthcheck"] as? [String: Any])?["test"] as? [String] { invocations.append(Array(check.dropFirst())) }
        }
        var checked = 0
        for words in invocations {
            // Commands inside `sh -c` strings are split into words too.
            let all = words.flatMap { $0.split(separator: " ").map(String.init) }
            for (index, word) in all.enumerated() where word == "replayd" || word == "replayctl" {
                let subcommand = word == "replayctl" ? [all[index + 1]] : []
                let help = try await runProgram(try builtExecutable(word), subcommand + ["--help"])
                #expect(help.status == 0)
                for flag in all[(index + 1)...].prefix(while: { $0 != "|" && $0 != ";" && $0 != "done" }) where flag.hasPrefix("--") {
                    #expect(help.stdout.contains(flag), "\(word) \(subcommand.joined()) has no \(flag)")
                    checked += 1
                }
            }
        }
        #expect(checked >= 8)
    }
}
