import Foundation
import GRDB
import ReplayTesting
import Testing

@testable import ReplayStore

/// The WAL is checkpointed in the writer's commits at a size that keeps each checkpoint near
/// its budget (`CheckpointPacing`, `WALCheckpoints`).
@Suite("Checkpoint pacing")
struct CheckpointPacingTests {
    @Test func aFreshStoreCheckpointsAtTheMostPages() {
        let pacing = CheckpointPacing()
        #expect(pacing.pages == CheckpointPacing.mostPages)
        #expect(!pacing.isDue(walFrames: CheckpointPacing.mostPages - 1))
        #expect(pacing.isDue(walFrames: CheckpointPacing.mostPages))
    }

    /// 4,000 new pages took 10 ms: the next checkpoint copies what 2.5 ms copies.
    @Test func aSlowCheckpointBringsTheNextOneSooner() {
        var pacing = CheckpointPacing()
        pacing.checkpointed(took: .milliseconds(10))
        #expect(pacing.pages == 1_000)
        pacing.checkpointed(took: .milliseconds(5))
        #expect(pacing.pages == 500)
        #expect(pacing.isDue(walFrames: 500))
    }

    @Test func aQuickCheckpointLetsTheWALGrowByAQuarterAtMost() {
        var pacing = CheckpointPacing()
        pacing.checkpointed(took: .milliseconds(20))
        #expect(pacing.pages == 500)
        pacing.checkpointed(took: .microseconds(100))
        #expect(pacing.pages == 625, "not 4,000: one quick checkpoint does not say that a larger one will be")
        pacing.checkpointed(took: CheckpointPacing.budget)
        #expect(pacing.pages == 625, "within the budget, the size stays")
    }

    @Test func theSizeStaysWithinItsBounds() {
        var pacing = CheckpointPacing()
        for _ in 0..<10 { pacing.checkpointed(took: .seconds(1)) }
        #expect(pacing.pages == CheckpointPacing.leastPages)
        for _ in 0..<20 { pacing.checkpointed(took: .microseconds(10)) }
        #expect(pacing.pages == CheckpointPacing.mostPages)
    }

    /// The writer's connection carries replay's hook, not SQLite's automatic checkpoint
    /// (whose pragma then reads 0), and its commits checkpoint: 300 events of 100 KB write
    /// about 7,500 pages, and the WAL holds no more than a checkpoint's size and a commit.
    @Test func theWritersCommitsCheckpointTheWAL() async throws {
        try await withTemporaryDirectory { folder in
            let store = try openStore(folder, autoCreate: StreamConfig(capacity: 100_000))
            defer { store.close() }
            #expect(try store.queryWriter { db in try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") } == 0)
            let payload = Data(repeating: 0x61, count: 100_000)
            for _ in 0..<300 { _ = try await store.append(payload, to: "s") }
            let walFrames = try store.queryWriter { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM event_log") == 300 ? try db.checkpoint(.passive).walFrameCount : -1
            }
            #expect((0...CheckpointPacing.mostPages + 100).contains(walFrames))
        }
    }
}
