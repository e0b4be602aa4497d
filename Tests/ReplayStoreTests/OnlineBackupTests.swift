import Foundation
import GRDB
import ReplayTesting
import Testing

@testable import ReplayStore

/// The store's online backup, below the daemon: a copy of many steps taken while the
/// writer commits is one snapshot (consistent, whole, every event up to each stream's last).
/// The limit is a guard against a copy that never ends: alone the test takes a second, in
/// the full suite on two cores it took up to two minutes (its 64 MB go through a disk every
/// other test is syncing too).
@Suite("store: online backup", .timeLimit(.minutes(5)))
struct OnlineBackupTests {
    @Test func aCopyOfManyStepsTakenWhileTheWriterCommitsIsOneSnapshot() async throws {
        try await withTemporaryDirectory { folder in
            let store = try openStore(folder, durability: .normal, autoCreate: StreamConfig(capacity: nil))
            defer { store.close() }
            // Four times the pages of one step (64 KB payloads), so that the copy takes steps.
            let payload = Data(repeating: 0x61, count: 64 << 10)
            let pages = Int(OnlineBackup.pagesPerStep) * 4
            for _ in 0..<(pages * 4096 / payload.count) { _ = try await store.append(payload, to: "big") }
            let writing = Task {
                var sequences: [UInt64] = []
                while !Task.isCancelled { sequences.append(try await store.append(Data("w".utf8), to: "small").sequence) }
                return sequences
            }
            try await eventually("the writer under way") { (store.info("small")?.lastSequence ?? 0) > 10 }
            let copied = try await Task.detached { try store.backup(to: folder + "/copy.sqlite") }.value
            writing.cancel()
            let written = try await writing.value
            var readOnly = Configuration()
            readOnly.readonly = true
            let copy = try DatabaseQueue(path: folder + "/copy.sqlite", configuration: readOnly)
            defer { try? copy.close() }
            #expect(try await copy.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
            let last = Dictionary(uniqueKeysWithValues: copied.map { ($0.stream, $0.lastSequence) })
            #expect(last["big"] == UInt64(pages * 4096 / payload.count))
            let small = try #require(last["small"])
            #expect(small > 10 && small < (written.last ?? 0), "the copy is a moment during the writes: \(small) of \(written.last ?? 0)")
            for stream in ["big", "small"] {
                let stored = try await copy.read { db in
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM events WHERE stream = ? AND seq <= ?", arguments: [stream, Int64(last[stream] ?? 0)])
                }
                let beyond = try await copy.read { db in
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM events WHERE stream = ? AND seq > ?", arguments: [stream, Int64(last[stream] ?? 0)])
                }
                #expect(stored == Int(last[stream] ?? 0), "every event of \(stream) up to its last")
                #expect(beyond == 0, "nothing of \(stream) after its last")
            }
        }
    }
}
