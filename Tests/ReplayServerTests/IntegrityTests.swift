import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// Hash chains against the real daemon: an event changed in its file (with the sqlite3
/// shell, and by a raw bit flip) is named by `replayctl verify` and reaches no reader as
/// good; signed checkpoints check out with the key from JWKS in code that shares nothing
/// with the daemon's; the same on PostgreSQL.
@Suite("replayd: hash chains and checkpoints", .timeLimit(.minutes(3)))
struct IntegrityTests {
    @Test func anEditedEventIsNamedByVerifyAndReachesNoReader() async throws {
        try await withTemporaryDirectory { directory in
            try await publishThenStop(in: directory, ["orders": (1...5).map { "e\($0)" }, "other": ["x"]])
            try await sh(
                "sqlite3 '\(directory)/replay.sqlite' \"UPDATE event_log SET payload = CAST('E3' AS BLOB) WHERE key = ((SELECT id FROM streams WHERE name = 'orders') << 40) | 3\""
            )
            // A new daemon: its tail rings are empty, every read is the store's.
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0"])
            let verified = try await replayctl(["verify"], daemon)
            #expect(verified.status == 4)
            #expect(verified.stderr.contains("stream 'orders' is broken at seq 3"), "\(verified.stderr)")
            #expect(verified.stdout.contains("BROKEN at seq 3") && verified.stdout.contains("ok"), "\(verified.stdout)")

            // A socket subscriber gets the events before it, then the error that names it.
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            var received: [String] = []
            do {
                for try await event in try await client.subscribe("orders") { received.append(String(decoding: event.payload, as: UTF8.self)) }
                Issue.record("the subscription ended without an error")
            } catch let ReplayClientError.server(error) {
                #expect(error.code == .corruptEvent && error.message.hasPrefix("stream=orders seq=3:"), "\(error)")
            }
            #expect(received == ["e1", "e2"])
            #expect(try await client.publish("other", "y") == 2, "the daemon serves on")
            await client.close()

            // HTTP: the events before it, then 500 with the error, never its bytes.
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            let first = try await http.request("GET", "/v1/stream/orders?offset=-1")
            #expect(first.status == 200 && String(decoding: first.body, as: UTF8.self) == "e1e2")
            let next = try #require(first.headers.first(name: "Stream-Next-Offset"))
            let failed = try await http.request("GET", "/v1/stream/orders?offset=\(next)")
            #expect(failed.status == 500)
            #expect(String(decoding: failed.body, as: UTF8.self).contains("CORRUPT_EVENT"))
            #expect(!String(decoding: failed.body, as: UTF8.self).contains("E3"))
            let metrics = String(decoding: try await http.request("GET", "/metrics").body, as: UTF8.self)
            let refused = metrics.split(separator: "\n").first { $0.hasPrefix("replay_corrupt_event_reads_total ") }
            #expect((refused.flatMap { Int($0.split(separator: " ")[1]) } ?? 0) >= 2, "\(refused ?? "no metric")")
            await daemon.stop()
            let log = try String(contentsOfFile: daemon.logPath, encoding: .utf8)
            #expect(log.contains("corrupt event, not served: stream=orders seq=3"))
        }
    }

    /// A bit flipped in the file itself, under SQLite (its pages have no checksum): found
    /// by `--verify-on-start` before serving, and by a reader.
    @Test func aFlippedBitInTheFileIsFoundAtStartAndByReaders() async throws {
        try await withTemporaryDirectory { directory in
            try await publishThenStop(in: directory, ["s": (1...10).map { String(format: "payload-%04d", $0) }])
            let path = directory + "/replay.sqlite"
            try await sh("sqlite3 '\(path)' 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null")
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            let target = try #require(bytes.range(of: Data("payload-0007".utf8)))
            bytes[target.lowerBound] ^= 0x01
            try bytes.write(to: URL(fileURLWithPath: path))

            let daemon = try await TestDaemon.start(in: directory, arguments: ["--verify-on-start"])
            let log = try String(contentsOfFile: daemon.logPath, encoding: .utf8)
            #expect(log.contains("hash chain broken") && log.contains("seq=7") && log.contains("stream=s"), "\(log)")
            let verified = try await replayctl(["verify", "s", "--json"], daemon)
            #expect(verified.status == 4)
            let reports = try JSONDecoder().decode([ChainReport].self, from: Data(verified.stdout.utf8))
            #expect(reports.first?.broken?.sequence == 7 && reports.first?.events == 6)
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            var received: [UInt64] = []
            await #expect(throws: ReplayClientError.self) {
                for try await event in try await client.subscribe("s", from: .from(5)) { received.append(event.sequence) }
            }
            #expect(received == [5, 6])
            await client.close()
            await daemon.stop()
        }
    }

    /// A checkpoint the daemon signed checks out with the key its HTTP door publishes, in
    /// Python with nothing of replay's (tools/verify_checkpoint.py: the signature, and the
    /// chain recomputed from the file), and with `replayctl verify --checkpoint`; after an
    /// edit, neither passes.
    @Test func aSignedCheckpointChecksOutWithTheKeyFromJWKSUntilTheLogIsChanged() async throws {
        try await withDaemon(arguments: ["--http", "127.0.0.1:0", "--checkpoint-every", "5"]) { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            // Exactly as many as --checkpoint-every: the first checkpoint is of event 5.
            for index in 1...5 { _ = try await client.publish("orders", "order \(index)") }
            var checkpoint: Checkpoint?
            for try await event in try await client.subscribe(Checkpoint.stream) {
                checkpoint = try JSONDecoder().decode(Checkpoint.self, from: event.payload)
                break
            }
            await client.close()
            let signed = try #require(checkpoint)
            #expect(signed.stream == "orders" && signed.seq == 5)

            let folder = (daemon.databasePath as NSString).deletingLastPathComponent
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            try await http.request("GET", "/v1/stream/__ds/jwks.json").body.write(to: URL(fileURLWithPath: folder + "/jwks.json"))
            try JSONEncoder().encode(signed).write(to: URL(fileURLWithPath: folder + "/checkpoint.json"))
            let python = ["python3", toolScript("verify_checkpoint.py"), folder + "/checkpoint.json", folder + "/jwks.json", "--db", daemon.databasePath]
            let holds = try await runProgram("/usr/bin/env", python)
            #expect(holds.status == 0 && holds.stdout.contains("checkpoint orders@5 holds"), "\(holds.stdout)\(holds.stderr)")
            let checked = try await replayctl(["verify", "--checkpoint", folder + "/checkpoint.json", "--jwks", folder + "/jwks.json"], daemon)
            #expect(checked.status == 0 && checked.stdout.contains("checkpoint orders@5 holds"), "\(checked.stderr)")

            // A checkpoint changed after signing is refused by both.
            var forged = signed
            forged.seq = 4
            try JSONEncoder().encode(forged).write(to: URL(fileURLWithPath: folder + "/forged.json"))
            let forgedPython = try await runProgram(
                "/usr/bin/env", ["python3", toolScript("verify_checkpoint.py"), folder + "/forged.json", folder + "/jwks.json"])
            #expect(forgedPython.status != 0 && forgedPython.stderr.contains("signature is not valid"))
            #expect(try await replayctl(["verify", "--checkpoint", folder + "/forged.json", "--jwks", folder + "/jwks.json"], daemon).status == 4)

            // The log changed under the checkpoint: neither arrives at its hash.
            try await sh(
                "sqlite3 '\(daemon.databasePath)' \"UPDATE event_log SET payload = CAST('order 0' AS BLOB) WHERE key = ((SELECT id FROM streams WHERE name = 'orders') << 40) | 2\""
            )
            let broken = try await runProgram("/usr/bin/env", python)
            #expect(broken.status != 0 && broken.stderr.contains("event 2 does not match"), "\(broken.stderr)")
            let refused = try await replayctl(["verify", "--checkpoint", folder + "/checkpoint.json", "--jwks", folder + "/jwks.json"], daemon)
            #expect(refused.status == 4 && refused.stderr.contains("broken at seq 2"), "\(refused.stderr)")
        }
    }

    /// A reader that asks gets each event's hash as stored (what `sqlite3` shows), live
    /// from the ring and from the store after a restart: `SUB … hash=on` (the Swift client's
    /// `hashes:`, `replayctl subscribe --json`), and `Replay-Chain-Hash` over HTTP.
    @Test func readersWhoAskGetEachEventsHash() async throws {
        try await withTemporaryDirectory { directory in
            var daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0"])
            var client = try await ReplayClient.connect(to: daemon.socketPath)
            let live = try await client.subscribe("orders", hashes: true)
            for index in 1...3 { _ = try await client.publish("orders", "e\(index)") }
            var fromRing: [String] = []
            for try await event in live {
                fromRing.append(event.hash?.hex ?? "none")
                if fromRing.count == 3 { break }
            }
            let stored = try await runProgram(
                "/usr/bin/sqlite3", [daemon.databasePath, "SELECT hash FROM events WHERE stream = 'orders' ORDER BY seq"])
            let hashes = stored.stdout.split(separator: "\n").map(String.init)
            #expect(hashes.count == 3 && fromRing == hashes)
            var plain: [EventHash?] = []
            for try await event in try await client.subscribe("orders") {
                plain.append(event.hash)
                if plain.count == 3 { break }
            }
            #expect(plain == [nil, nil, nil], "a reader that does not ask gets no hashes")
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            let read = try await http.request("GET", "/v1/stream/orders?offset=-1")
            #expect(read.headers.first(name: "Replay-Chain-Hash") == hashes.last)
            let json = try await runProgram(
                try builtExecutable("replayctl"), ["subscribe", "orders", "--json", "--count", "3", "--socket", daemon.socketPath])
            #expect(json.stdout.contains("\"hash\":\"\(hashes[1])\""), "\(json.stdout)")
            await client.close()
            await daemon.stop()

            // From the store, after a restart (the ring is empty).
            daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0"])
            client = try await ReplayClient.connect(to: daemon.socketPath)
            var fromStore: [String] = []
            for try await event in try await client.subscribe("orders", hashes: true) {
                fromStore.append(event.hash?.hex ?? "none")
                if fromStore.count == 3 { break }
            }
            #expect(fromStore == hashes)
            let again = try await HTTPTestClient(address: try await daemon.httpAddress()).request("GET", "/v1/stream/orders?offset=-1")
            #expect(again.headers.first(name: "Replay-Chain-Hash") == hashes.last)
            await client.close()
            await daemon.stop()
        }
    }

    /// Group members (writer-framed hand-outs and those the member reads itself, from the
    /// ring and, after a restart, from the store), pattern subscribers and their groups get
    /// each event's hash when they ask; an SSE reader gets the link of each `data` event's
    /// last event in the `control` event after it.
    @Test func groupMembersPatternSubscribersAndSSEReadersGetTheHashes() async throws {
        try await withTemporaryDirectory { directory in
            var daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0"])
            var client = try await ReplayClient.connect(to: daemon.socketPath)
            // Three large payloads pass the megabyte the writer frames for one hand-out: the
            // member reads the last event itself, through the cursor.
            let big = String(repeating: "x", count: 700_000)
            for payload in ["j1", "j2", big, big, big] { _ = try await client.publish("jobs/a", payload) }
            let stored = try await runProgram(
                "/usr/bin/sqlite3", [daemon.databasePath, "SELECT hash FROM events WHERE stream = 'jobs/a' ORDER BY seq"])
            let hashes = stored.stdout.split(separator: "\n").map(String.init)
            #expect(hashes.count == 5)
            guard case .success(let pattern) = StreamPattern.parse("jobs/*") else { throw TestFailure("a valid pattern") }

            #expect(try await handedOut(client.subscribe("jobs/a", group: GroupOptions(group: "ring", maxPending: 10), hashes: true)) == hashes)
            var matched: [String] = []
            for try await event in try await client.subscribe(pattern: pattern, hashes: true) {
                matched.append(event.hash?.hex ?? "none")
                if matched.count == 5 { break }
            }
            #expect(matched == hashes)
            var unasked: [EventHash?] = []
            for try await event in try await client.subscribe(pattern: pattern) {
                unasked.append(event.hash)
                if unasked.count == 5 { break }
            }
            #expect(unasked == [nil, nil, nil, nil, nil])
            await client.close()
            await daemon.stop()

            // From the store, after a restart (the ring is empty).
            daemon = try await TestDaemon.start(in: directory, arguments: ["--http", "127.0.0.1:0"])
            client = try await ReplayClient.connect(to: daemon.socketPath)
            #expect(try await handedOut(client.subscribe("jobs/a", group: GroupOptions(group: "store", maxPending: 10), hashes: true)) == hashes)
            #expect(try await handedOut(client.subscribe(pattern: pattern, group: GroupOptions(group: "pattern"), hashes: true)) == hashes)
            let http = try HTTPTestClient(address: try await daemon.httpAddress())
            let sse = try await http.stream("/v1/stream/jobs/a?offset=-1&live=sse") { $0.contains("\"upToDate\":true") }
            let text = String(decoding: sse.body, as: UTF8.self)
            #expect(text.contains("\"replayChainHash\":\"\(hashes[4])\""), "\(text.suffix(300))")
            await client.close()
            await daemon.stop()
        }
    }

    /// The hashes of a group member's first five events, each acknowledged.
    private func handedOut(_ member: ReplaySubscription) async throws -> [String] {
        var handed: [String] = []
        for try await event in member {
            handed.append(event.hash?.hex ?? "none")
            try await member.acknowledge(event)
            if handed.count == 5 { break }
        }
        return handed
    }

    @Test func onPostgreSQLAnEditedEventIsNamedByVerify() async throws {
        try await TestPostgres.withDatabase { url in
            try await withDaemon(database: url) { daemon in
                let client = try await ReplayClient.connect(to: daemon.socketPath)
                for index in 1...4 { _ = try await client.publish("orders", "e\(index)") }
                await client.close()
                #expect(try await replayctl(["verify"], daemon).status == 0)
                try await TestPostgres.psql(
                    url, "UPDATE event_log SET payload = convert_to('E2', 'UTF8') WHERE seq = 2 AND stream_id = (SELECT id FROM streams WHERE name = 'orders')")
                let verified = try await replayctl(["verify", "orders"], daemon)
                #expect(verified.status == 4 && verified.stderr.contains("broken at seq 2"), "\(verified.stderr)")
            }
        }
    }

    // MARK: -

    /// A daemon in `directory` that stores `events` and stops.
    private func publishThenStop(in directory: String, _ events: [String: [String]]) async throws {
        let daemon = try await TestDaemon.start(in: directory, arguments: ["--default-capacity", "unlimited"])
        let client = try await ReplayClient.connect(to: daemon.socketPath)
        for (stream, payloads) in events.sorted(by: { $0.key < $1.key }) {
            for payload in payloads { _ = try await client.publish(stream, payload) }
        }
        await client.close()
        await daemon.stop()
    }

    private func sh(_ command: String) async throws {
        let result = try await runProgram("/bin/sh", ["-c", command])
        guard result.status == 0 else { throw TestFailure("`\(command)` exited \(result.status): \(result.stderr)") }
    }

    private func replayctl(_ arguments: [String], _ daemon: TestDaemon) async throws -> (status: Int32, stdout: String, stderr: String) {
        let result = try await runProgram(try builtExecutable("replayctl"), arguments + ["--socket", daemon.socketPath])
        return (result.status, result.stdout, result.stderr)
    }
}
