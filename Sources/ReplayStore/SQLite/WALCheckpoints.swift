import GRDB
import GRDBSQLite
import Metrics

/// The writer's checkpoints of SQLite's WAL, paced by `CheckpointPacing`, in the commit
/// that fills the WAL as SQLite's automatic checkpoint does.
///
/// By hand rather than `PRAGMA wal_autocheckpoint`: that size is fixed, and the pacing
/// needs each checkpoint timed. SQLite's automatic checkpoint is itself a WAL hook
/// (`sqlite3_wal_hook`, called after each commit with the WAL's frames) that runs a
/// `PASSIVE` checkpoint; this one is the same with its own size, and replaces it on the
/// writer's connection. The readers never commit, so they never checkpoint.
final class WALCheckpoints: @unchecked Sendable {
    // `pacing` is used inside the writer connection's commits only, which GRDB runs one at
    // a time on its writer queue: the hook is installed on that connection alone.
    private var pacing = CheckpointPacing()

    /// Installs the hook on `db`, the writer's connection. `self` must outlive it.
    func install(on db: Database) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            db.sqliteConnection,
            { context, connection, name, walFrames in
                guard let context else { return SQLITE_OK }
                Unmanaged<WALCheckpoints>.fromOpaque(context).takeUnretainedValue().committed(connection, name, walFrames: Int(walFrames))
                return SQLITE_OK
            }, context)
    }

    /// After a commit that left `walFrames` frames in the WAL of the database `name`.
    private func committed(_ connection: OpaquePointer?, _ name: UnsafePointer<CChar>?, walFrames: Int) {
        guard pacing.isDue(walFrames: walFrames) else { return }
        let started = ContinuousClock.now
        var frames: Int32 = 0
        var copied: Int32 = 0
        // PASSIVE, as SQLite's own: it copies what no reader still uses and never waits. A
        // failure (another process checkpointing) leaves the WAL for the next commit.
        let result = sqlite3_wal_checkpoint_v2(connection, name, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied)
        guard result == SQLITE_OK, copied > 0 else { return }
        let took = ContinuousClock.now - started
        pacing.checkpointed(took: took)
        Self.duration.record(duration: took)
        Self.size.record(pacing.pages)
    }

    /// Each checkpoint's time, and the WAL frames at which the next one will run.
    static let duration = Metrics.Timer(label: "replay_wal_checkpoint_duration_seconds")
    static let size = Gauge(label: "replay_wal_checkpoint_pages")
}
