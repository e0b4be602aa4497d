import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplaySync
import ReplayTesting
import Testing

/// `replayctl backup`: a copy taken from the real daemon while publishers keep writing,
/// served by a second daemon, and the requests refused with their reasons.
@Suite("replayd: online backup", .timeLimit(.minutes(3)))
struct BackupTests {
    @Test func aBackupTakenUnderLoadHoldsEveryAcknowledgedEventAndIsServed() async throws {
        try await withTemporaryDirectory { directory in
            let copyPath = (directory + "/copy.sqlite" as NSString).standardizingPath
            // Every event kept, so that the copy can be checked against every acknowledgement.
            let (copy, acknowledgedBefore) = try await withDaemon(arguments: ["--default-capacity", "unlimited"]) { daemon in
                let acknowledged = Locked<[String: [UInt64: String]]>([:])
                @Sendable func publish(_ client: WireClient, _ publisher: Int, batch: Int) async throws {
                    let payloads = (0..<50).map { "p\(publisher)-b\(batch)-\($0)" }
                    let sequences = try await client.publish("load\(publisher)", payloads)
                    acknowledged.withLock {
                        for (sequence, payload) in zip(sequences, payloads) { $0["load\(publisher)", default: [:]][sequence] = payload }
                    }
                }
                // Acknowledged before the backup: 2 × 1,000 events.
                try await withWireClient(daemon.socketPath) { client in
                    for publisher in 0..<2 { for batch in 0..<20 { try await publish(client, publisher, batch: batch) } }
                }
                let before = acknowledged.value
                // Then publishers that keep writing while the copy is taken, and after.
                let publishers = (0..<2).map { publisher in
                    Task {
                        try await withWireClient(daemon.socketPath) { client in
                            for batch in 20... {
                                try Task.checkCancellation()
                                try await publish(client, publisher, batch: batch)
                            }
                        }
                    }
                }
                defer { for publisher in publishers { publisher.cancel() } }
                // replayctl itself, from the test's folder: a relative path is the shell's.
                let result = try await runProgram(
                    "/bin/sh", ["-c", "cd '\(directory)' && '\(try builtExecutable("replayctl"))' backup --json copy.sqlite --socket '\(daemon.socketPath)'"])
                #expect(result.status == 0, "\(result.stderr)")
                let described = try JSONDecoder().decode(BackupDescription.self, from: Data(result.stdout.utf8))
                let after = acknowledged.withLock { $0.values.map(\.count).reduce(0, +) }
                try await eventually("publishing goes on after the backup") { acknowledged.withLock { $0.values.map(\.count).reduce(0, +) } > after }
                return (described, before)
            }
            #expect(copy.path == copyPath)
            #expect(copy.bytes == (try FileManager.default.attributesOfItem(atPath: copyPath)[.size] as? Int))
            #expect(!FileManager.default.fileExists(atPath: copyPath + ".partial"))
            #expect(Set(copy.streams.map(\.stream)) == ["load0", "load1"])
            // A daemon on the copy serves exactly what the backup said it holds.
            // (The first daemon has stopped: its folder and socket path are free.)
            do {
                let daemon = try await TestDaemon.start(in: directory, database: "copy.sqlite")
                // Every chain in the copy holds, through the events written during the copy.
                let verified = try await runProgram(try builtExecutable("replayctl"), ["verify", "--json", "--socket", daemon.socketPath])
                #expect(verified.status == 0, "\(verified.stdout)\(verified.stderr)")
                let reports = try JSONDecoder().decode([ChainReport].self, from: Data(verified.stdout.utf8))
                #expect(Set(reports.map(\.stream)) == Set(copy.streams.map(\.stream)) && reports.allSatisfy(\.isIntact))
                for report in reports { #expect(report.last == copy.streams.first { $0.stream == report.stream }?.last) }
                try await withWireClient(daemon.socketPath) { client in
                    for stream in copy.streams {
                        let before = acknowledgedBefore[stream.stream] ?? [:]
                        #expect(stream.last >= before.keys.max() ?? 0)
                        try await client.subscribe(stream.stream, sid: stream.stream)
                        let events = Dictionary(uniqueKeysWithValues: try await client.events(Int(stream.last)).map { ($0.0, $0.1) })
                        #expect(events.keys.max() == stream.last)
                        for (sequence, payload) in before { #expect(events[sequence] == payload, "\(stream.stream) #\(sequence)") }
                    }
                    // The copy is a store like any other: it takes new events after its last.
                    let next = try await withWireClient(daemon.socketPath) { try await $0.publish("load0", ["after"]) }
                    #expect(next == [(copy.streams.first { $0.stream == "load0" }?.last ?? 0) + 1])
                }
                await daemon.stop()
            }
        }
    }

    @Test func requestsItCannotDoAreRefusedWithTheirReason() async throws {
        try await withDaemon(arguments: ["--socket-mode", "0666"]) { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("s", contentsOf: [Data("x".utf8)])
            let folder = (daemon.socketPath as NSString).deletingLastPathComponent
            let taken = folder + "/taken"
            try Data("mine".utf8).write(to: URL(fileURLWithPath: taken))
            for (path, reason) in [
                ("relative.sqlite", "must be absolute"), (taken, "exists; a backup never replaces a file"),
                (folder + "/no/such/folder/copy.sqlite", "no folder"),
            ] {
                do {
                    _ = try await client.backup(to: path)
                    Issue.record("a backup to \(path) was taken")
                } catch let ReplayClientError.server(error) {
                    #expect(error.code == .invalidConfig && error.message.contains(reason), "\(error.message)")
                }
            }
            #expect(try String(contentsOfFile: taken, encoding: .utf8) == "mine", "an existing file is left as it was")
            await client.close()

            // Another user, let in by the socket's mode, may not have the daemon write files.
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: folder)
            let other = try await runProgram(
                "/usr/bin/setpriv",
                [
                    "--reuid=65534", "--regid=65534", "--clear-groups", try builtExecutable("replayctl"), "backup", folder + "/theirs.sqlite", "--socket",
                    daemon.socketPath,
                ])
            #expect(other.status == 1)
            #expect(other.stderr.contains("forbidden") && other.stderr.contains("own user"), "\(other.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder + "/theirs.sqlite"))
        }
    }

    @Test func aPostgreSQLStoreSaysWhichToolsBackItUp() async throws {
        try await TestPostgres.withDatabase { url in
            try await withDaemon(database: url) { daemon in
                let client = try await ReplayClient.connect(to: daemon.socketPath)
                do {
                    _ = try await client.backup(to: "/tmp/never.sqlite")
                    Issue.record("a PostgreSQL store was backed up")
                } catch let ReplayClientError.server(error) {
                    #expect(error.message.contains("pg_dump"), "\(error.message)")
                }
                await client.close()
            }
        }
    }
}
