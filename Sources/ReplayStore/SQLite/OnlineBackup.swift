import Foundation
import GRDB

/// A consistent copy of a live SQLite log, taken beside the writer.
///
/// SQLite's online backup API inside one of the pool's read transactions: the reader's
/// snapshot is the copy, so it holds every commit made before it began and none after,
/// and in WAL mode the writer goes on committing meanwhile (its checkpoints wait for the
/// snapshot, so the WAL grows by what is written during the copy). Without a transaction
/// of its own around the steps, the API starts over whenever another connection writes
/// the source: under 4 publishers, `sqlite3 .backup` (100 pages a step, each its own
/// transaction) had not finished after 10 minutes.
/// `VACUUM INTO` also copies a snapshot, and compacts it, but took 25–50 % longer and let
/// commits take up to 250 ms where they took up to 100 ms with this (README, "Backups":
/// `tools/backup_under_load.sh`).
///
/// The copy is written beside its destination (`<path>.partial`) and linked to `path`
/// once complete, so that `path` is never a partial copy and is never an existing file
/// replaced.
enum OnlineBackup {
    static func copy(_ pool: DatabasePool, to path: String) throws(StoreError) -> [(stream: String, lastSequence: UInt64)] {
        let partial = path + ".partial"
        do {
            try checkDestination(path, partial: partial)
            // Whatever happens, no partial copy (nor its journal) is left behind.
            defer { for file in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: partial + file) } }
            let destination = try DatabaseQueue(path: partial)
            // The copy's pages are flushed as they are written, a step at a time: left to
            // its final commit, the flush of the whole file (650 MB in a second) queued
            // every commit's fsync behind it.
            let flushed = open(partial, O_RDONLY)
            defer { if flushed >= 0 { close(flushed) } }
            try pool.backup(to: destination, pagesPerStep: pagesPerStep) { _ in
                if flushed >= 0 { _ = fdatasync(flushed) }
            }
            let streams = try destination.read { db in
                try Row.fetchAll(db, sql: "SELECT name, last_seq FROM streams WHERE deleted_at IS NULL ORDER BY name").map {
                    (stream: $0[0] as String, lastSequence: UInt64($0[1] as Int64))
                }
            }
            // Closing the copy's only connection folds its WAL into the file: one file.
            try destination.close()
            guard link(partial, path) == 0 else {
                throw StoreError.backupRefused("cannot create \(path): \(String(cString: strerror(errno)))")
            }
            // The copy's pages were synced by its commit; its name, with its folder's.
            let folder = open((path as NSString).deletingLastPathComponent, O_RDONLY | O_DIRECTORY)
            if folder >= 0 {
                _ = fsync(folder)
                close(folder)
            }
            return streams
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// Pages copied between two flushes (16 MB of 4 KB pages). The steps share one read
    /// transaction (the pool's read), so the copy is one snapshot and never starts over.
    static let pagesPerStep: CInt = 4096

    /// An absolute path, in a folder that exists, to no file yet.
    private static func checkDestination(_ path: String, partial: String) throws(StoreError) {
        guard path.hasPrefix("/") else { throw .backupRefused("a backup's path must be absolute: \(path)") }
        let folder = (path as NSString).deletingLastPathComponent
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw .backupRefused("no folder \(folder) for the backup")
        }
        for taken in [path, partial] where FileManager.default.fileExists(atPath: taken) {
            throw .backupRefused("\(taken) exists; a backup never replaces a file")
        }
    }
}
