import Foundation
import GRDB
import GRDBSQLite

/// The WAL's file kept at its working size, so that commits rewrite it in place.
///
/// An fdatasync of a write that extends a file must also make the file's new size durable
/// (a journal commit of the filesystem's metadata), and took 119–210 µs here where one that
/// rewrites blocks already there took 80–104 (`tools/fsync_latency.c`). SQLite's WAL grows
/// until its first checkpoint and is then rewritten from its start, so a new WAL pays the
/// slower kind for its first `CheckpointPacing.mostPages` pages: one-at-a-time publishing
/// took 288 µs a commit at the median there against 223 after. And a clean stop used to
/// remove the WAL, so every start went through that stretch again.
///
/// PostgreSQL answers the same cost by zero-filling each new WAL segment before use
/// (`wal_init_zero`) and recycling old segments rather than deleting them. Here:
/// - `reserve` zero-fills the WAL's file up to its working size when the store opens. It
///   only ever appends: a WAL left by a crash keeps its frames, and SQLite's recovery stops
///   at the first frame whose salt is not the header's, which zeros never are.
/// - every connection keeps the file when it closes (`SQLITE_FCNTL_PERSIST_WAL`); and
/// - a clean stop (`restartForNextStart`) checkpoints all of it and starts it over, so the
///   next start's recovery reads one frame, not up to 16 MB of frames already copied.
///
/// The price is the file's size on disk while the daemon is stopped (20.6 MB), and one
/// zero-fill and fdatasync of it on a database's first start (about 20 ms more here, 49
/// against 30 to the first PING), or after another program removed the WAL (the `sqlite3`
/// shell does, when it closes the database last). After a clean stop the database file is
/// whole on its own: copying it alone copies every event.
enum WALFile {
    /// The page size of the databases replay creates (SQLite's default; replay sets none).
    static let pageSize = 4_096
    /// What a WAL frame adds to its page, and the WAL's header (SQLite's file format).
    static let frameHeader = 24
    static let header = 32

    /// The size `reserve` makes the WAL's file for a WAL checkpointed at `pages`: a quarter
    /// more, because the commit that crosses `pages` is written whole before it checkpoints,
    /// and readers still using old frames can hold a checkpoint back.
    static func workingSize(checkpointPages pages: Int) -> Int {
        header + (pages + pages / 4) * (frameHeader + pageSize)
    }

    /// Zero-fills the WAL of `db` (the file `<path>-wal`) up to `bytes`, and makes the
    /// zeros durable. Appends only, and inside a write transaction: no other writer of the
    /// file (a `sqlite3` shell, say) can be appending frames meanwhile. Best effort: a disk
    /// too full for it is given back what was appended, and SQLite grows the file as it
    /// always did.
    static func reserve(_ db: Database, path databasePath: String, bytes: Int) throws {
        try db.execute(sql: "BEGIN IMMEDIATE")
        defer { try? db.execute(sql: "COMMIT") }
        // The WAL exists once a WAL-mode database is open; this only writes to its end.
        let fd = open(databasePath + "-wal", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var file = stat()
        guard fstat(fd, &file) == 0, Int(file.st_size) < bytes else { return }
        let start = Int(file.st_size)
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        var offset = start
        while offset < bytes {
            let count = min(zeros.count, bytes - offset)
            let written = zeros.withUnsafeBytes { pwrite(fd, $0.baseAddress, count, off_t(offset)) }
            guard written > 0 else {
                _ = ftruncate(fd, off_t(start))
                return
            }
            offset += written
        }
        if fdatasync(fd) != 0 { _ = ftruncate(fd, off_t(start)) }
    }

    /// Keeps the WAL's file when `db` closes (each connection decides for itself, and the
    /// last to close a database removes the WAL unless this is set on it).
    static func keepOnClose(_ db: Database) {
        var persist: Int32 = 1
        _ = sqlite3_file_control(db.sqliteConnection, nil, SQLITE_FCNTL_PERSIST_WAL, &persist)
    }

    /// At a clean stop, on the writer: copies the whole WAL into the database file and, once
    /// no reader uses it, starts it over with one frame (a write transaction restarts a
    /// fully copied WAL: it rewrites the header with a new salt, which ends every older
    /// frame). What the write changes is the database header's `user_version`, to the value
    /// it has. A file that grew past `bytes` (readers held its checkpoints back) is cut back
    /// to it: past the one frame, nothing in it is read again.
    static func restartForNextStart(_ db: Database, path databasePath: String, bytes: Int) throws {
        let (walFrames, copied) = try db.checkpoint(.restart)
        guard walFrames == copied else { return }  // a reader held it: recovery reads it all, as after a crash
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        try db.execute(sql: "PRAGMA user_version = \(version)")
        var file = stat()
        if stat(databasePath + "-wal", &file) == 0, Int(file.st_size) > bytes { _ = truncate(databasePath + "-wal", off_t(bytes)) }
    }
}
