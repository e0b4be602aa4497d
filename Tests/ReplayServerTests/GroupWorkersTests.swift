import Foundation
import ReplayProtocol
import ReplayTesting
import Testing

/// Worker processes (tools/replay_client.py's `work`) share a consumer group while one of
/// them is killed holding events: on one SQLite daemon, and on two daemons sharing one
/// PostgreSQL database, the workers spread over both.
@Suite("replayd: group workers", .timeLimit(.minutes(5)))
struct GroupWorkersTests {
    enum Store: String, CaseIterable {
        case sqlite, postgres
    }

    /// What one worker printed: each event it was given, and each one its ACK was committed for.
    struct Log {
        var got: [UInt64] = []
        var acked: [UInt64] = []

        init(_ text: String) {
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                guard words.count == 2, let sequence = UInt64(words[1]) else { continue }
                if words[0] == "got" { got.append(sequence) } else if words[0] == "acked" { acked.append(sequence) }
            }
        }
    }

    @Test(arguments: Store.allCases)
    func threeWorkersShareTheWorkAndAKilledOnesEventsGoToTheOthers(_ store: Store) async throws {
        switch store {
        case .sqlite:
            try await withDaemon { daemon in
                try await share(sockets: [daemon.socketPath, daemon.socketPath, daemon.socketPath], query: daemon.socketPath)
            }
        case .postgres:
            try await withTwoDaemons { first, second in
                try await share(sockets: [first.socketPath, second.socketPath, second.socketPath], query: first.socketPath)
            }
        }
    }

    func share(sockets: [String], query: String) async throws {
        let total = 10_000
        try await withWireClient(query) { publisher in
            for chunk in stride(from: 1, through: total, by: 1_000) {
                _ = try await publisher.publish("jobs", (chunk..<chunk + 1_000).map { "job \($0)" })
            }
        }
        try await withTemporaryDirectory { directory in
            var workers: [BackgroundProcess] = []
            for (index, socket) in sockets.enumerated() {
                workers.append(
                    try await BackgroundProcess(
                        "/usr/bin/env",
                        [
                            "python3", toolScript("replay_client.py"), "--socket", socket, "work", "jobs", "--group", "g",
                            "--member", "w\(index)", "--max-pending", "50",
                        ],
                        outputPath: "\(directory)/w\(index).log"))
            }
            // The first worker is killed while it holds events (it was handed some and
            // acknowledged fewer): its connection closes, and what it held goes back.
            try await eventually("the first worker at work") { Log(workers[0].output).got.count >= 200 }
            #expect(await workers[0].stop(SIGKILL) == SIGKILL)
            let killed = Log(workers[0].output)
            let held = Set(killed.got).subtracting(killed.acked)
            try await withWireClient(query) { client in
                try await eventually(within: 120, "every event acknowledged") {
                    try await client.send(.groups(stream: "jobs"))
                    guard case .list(let body) = try await client.expectFrame() else { return false }
                    let group = try JSONDecoder().decode([GroupDescription].self, from: Data(body.readableBytesView)).first
                    return group?.pending == 0 && group?.lag == 0
                }
            }
            for worker in workers.dropFirst() { await worker.stop() }
            let logs = workers.map { Log($0.output) }
            // Every event acknowledged exactly once, by one worker. The killed worker's last
            // ACKs may have been committed without it reading their +OK: those events are
            // not delivered again, so they count as its own.
            var acked = logs.dropFirst().flatMap(\.acked)
            let committedUnread = Set(killed.got).subtracting(logs.dropFirst().flatMap(\.got)).subtracting(killed.acked)
            acked += killed.acked + committedUnread
            #expect(acked.count == total)
            #expect(Set(acked) == Set(1...UInt64(total)))
            // No event went to two members at once: an event two workers were given was held
            // by the killed one and handed out again after it died.
            var givenTo: [UInt64: Int] = [:]
            for log in logs { for sequence in Set(log.got) { givenTo[sequence, default: 0] += 1 } }
            let twice = Set(givenTo.filter { $0.value > 1 }.keys)
            #expect(twice.isSubset(of: held))
            // What it held and had not acknowledged was delivered again to the others.
            #expect(!held.isEmpty)
            #expect(held.subtracting(committedUnread).isSubset(of: Set(logs.dropFirst().flatMap(\.got))))
        }
    }
}
