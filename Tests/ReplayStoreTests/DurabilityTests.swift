import Foundation
import GRDB
import ReplayTesting
import Subprocess
import SystemPackage
import Testing

@testable import ReplayStore

@Suite("Durability")
struct DurabilityTests {
    @Test(arguments: Durability.allCases)
    func historySequenceAndTerminalStateSurviveARestart(durability: Durability) async throws {
        try await withTemporaryDirectory { directory in
            do {
                let store = try openStore(directory, durability: durability)
                _ = try await store.create("orders", config: StreamConfig(capacity: 3))
                _ = try await store.appendAll(["1", "2", "3", "4"], to: "orders")
                _ = try await store.create("done", config: .unlimited)
                _ = try await store.appendAll(["only"], to: "done")
                try await store.terminate("done", .completed)
                store.close()
            }
            let store = try openStore(directory, durability: durability)
            defer { store.close() }
            #expect(try store.texts("orders") == ["2", "3", "4"])
            #expect(try await store.appendAll(["5"], to: "orders") == [5], "sequence continues, never reused")
            #expect(store.info("done")?.terminal == .completed)
            await #expect(throws: StoreError.terminated(stream: "done")) {
                _ = try await store.append(Data("x".utf8), to: "done")
            }
            // On the writer's connection, which commits (GRDB's pool sets NORMAL there when
            // it turns WAL mode on), and on a reader's.
            let expected = durability == .full ? 2 : 1
            #expect(try store.queryWriter { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == expected)
            #expect(try store.query { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } == expected)
        }
    }

    /// A child process appends with many in flight and prints each acknowledged append; it
    /// is killed with SIGKILL mid-stream. Every append it reported is in the database.
    @Test func everyAcknowledgedAppendSurvivesSIGKILL() async throws {
        try await withTemporaryDirectory { directory in
            let database = directory + "/replay.sqlite"
            // Read acknowledgements until a good number arrived, then kill mid-stream.
            let run = try await Subprocess.run(
                .path(FilePath(try builtExecutable("ReplayStoreProbe"))), arguments: [database, "crash", "100000000"],
                input: .none, output: .sequence, error: .discarded
            ) { execution in
                var acknowledged: [(UInt64, String)] = []
                var buffer: [UInt8] = []
                reading: for try await chunk in execution.standardOutput {
                    chunk.withUnsafeBytes { buffer += $0 }
                    while let newline = buffer.firstIndex(of: 10) {
                        let parts = String(decoding: buffer[..<newline], as: UTF8.self).split(separator: " ")
                        buffer.removeSubrange(...newline)
                        acknowledged.append((UInt64(parts[0])!, String(parts[1])))
                        if acknowledged.count >= 3_000 { break reading }
                    }
                }
                try execution.send(signal: .kill)
                return acknowledged
            }
            #expect(run.terminationStatus == .signaled(SIGKILL))
            let acknowledged = run.closureResult
            #expect(acknowledged.count >= 3_000)

            let store = try openStore(directory)
            defer { store.close() }
            let stored = try store.read("crash", from: 1, limit: Int.max)
            let byPayload = Dictionary(uniqueKeysWithValues: stored.map { (String(decoding: $0.payload, as: UTF8.self), $0.sequence) })
            for (sequence, payload) in acknowledged {
                #expect(byPayload[payload] == sequence, "acknowledged \(payload) as \(sequence) but it is not stored so")
            }
            #expect(stored.map(\.sequence) == Array(1...UInt64(stored.count)), "contiguous after the crash")
            let check = try store.query { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
            #expect(check == "ok")
        }
    }
}
