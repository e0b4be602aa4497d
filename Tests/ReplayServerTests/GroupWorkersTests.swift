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

    /// What one worker printed: each event it was given, each it sent an ACK for (logged just
    /// before sending), and each its ACK was committed for.
    struct Log {
        var got: [UInt64] = []
        var acking: [UInt64] = []
        var acked: [UInt64] = []

        init(_ text: String) {
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                guard words.count == 2, let sequence = UInt64(words[1]) else { continue }
                switch words[0] {
                case "got": got.append(sequence)
                case "acking": acking.append(sequence)
                case "acked": acked.append(sequence)
                default: break
                }
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
                // The first worker takes its time over each event, so it always holds some.
                let delay = index == 0 ? ["--delay", "0.02"] : []
                workers.append(
                    try await BackgroundProcess(
                        "/usr/bin/env",
                        [
                            "python3", toolScript("replay_client.py"), "--socket", socket, "work", "jobs", "--group", "g",
                            "--member", "w\(index)", "--max-pending", "50",
                        ] + delay,
                        outputPath: "\(directory)/w\(index).log"))
            }
            // The first worker is killed while it holds events (it was handed up to 50 and is
            // working on one): its connection closes, and what it held goes back.
            try await eventually("the first worker at work") { Log(workers[0].output).got.count >= 20 }
            #expect(await workers[0].stop(SIGKILL) == SIGKILL)
            let killed = Log(workers[0].output)
            let held = Set(killed.got).subtracting(killed.acked)
            let final = try await withWireClient(query) { client in
                var last: GroupDescription?
                try await eventually(within: 120, "every event acknowledged") {
                    try await client.send(.groups(stream: "jobs"))
                    guard case .list(let body) = try await client.expectFrame() else { return false }
                    last = try JSONDecoder().decode([GroupDescription].self, from: Data(body.readableBytesView)).first
                    return last?.pending == 0 && last?.lag == 0
                }
                return last
            }
            // The others were still running (a refused ACK would have ended them with an error).
            for worker in workers.dropFirst() { #expect(await worker.stop() == SIGTERM) }
            let logs = workers.map { Log($0.output) }
            // Every event acknowledged exactly once: the daemon has nothing pending and nothing
            // left to hand out (so every event's ACK was committed), every event had an ACK
            // sent, and no event's ACK was confirmed twice. (A worker stopped or killed may
            // have sent ACKs whose confirmation it never read.)
            #expect(final?.delivered == UInt64(total))
            #expect(Set(logs.flatMap(\.acking)) == Set(1...UInt64(total)))
            let confirmed = logs.flatMap(\.acked)
            #expect(confirmed.count == Set(confirmed).count)
            // No event went to two members at once: an event two workers were given was held
            // by the killed one and handed out again after it died.
            var givenTo: [UInt64: Int] = [:]
            for log in logs { for sequence in Set(log.got) { givenTo[sequence, default: 0] += 1 } }
            let twice = Set(givenTo.filter { $0.value > 1 }.keys)
            #expect(twice.isSubset(of: held))
            // What it held went to the others: every event it was given and never sent an ACK
            // for (and those still unread in its socket's buffer, which it never logged).
            let othersGot = Set(logs.dropFirst().flatMap(\.got))
            #expect(Set(killed.got).subtracting(killed.acking).isSubset(of: othersGot))
            #expect((final?.redelivered ?? 0) >= 10, "\(String(describing: final))")
        }
    }
}
