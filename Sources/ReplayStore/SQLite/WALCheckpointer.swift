import Dispatch
import GRDB

/// Copies the WAL's pages into the database file beside the writer, on a connection and a
/// thread of its own, so that the writer's commits seldom carry a checkpoint's work.
///
/// SQLite checkpoints in the commit that leaves the WAL at `SQLiteLog.checkpointPages`, on
/// the writer's thread: it copies every page the WAL holds into the database file and waits
/// for that file's fdatasync, and the commit's publishes wait with it. Under expiry at
/// 100,000 events a second those commits took 13–20 ms (docs/PERFORMANCE.md, "Event
/// expiry"). Every `interval` this does a `PASSIVE` checkpoint instead, which never waits
/// for the writer or a reader (and is skipped while the writer's own runs): the copying and
/// the file's fdatasync happen here, a little at a time, and the writer's checkpoint finds
/// little left to copy. The WAL still starts over only where SQLite lets it, at a write
/// transaction that finds every frame copied, so its size stays bounded as before.
///
/// By hand rather than GRDB's: its pools checkpoint on the writer's connection only, and
/// this needs a connection that may write the database file while the writer writes the WAL.
final class WALCheckpointer: @unchecked Sendable {
    // `connection` and `timer` are used on `queue` only.
    private let connection: DatabaseQueue
    private let queue = DispatchQueue(label: "replay.checkpointer")
    private let timer: DispatchSourceTimer

    /// Every 50 ms: at 100,000 expiring events a second, a few hundred pages each time.
    init(path: String, interval: DispatchTimeInterval = .milliseconds(50)) throws {
        var configuration = Configuration()
        configuration.label = "replay.checkpointer"
        configuration.prepareDatabase { db in WALFile.keepOnClose(db) }
        connection = try DatabaseQueue(path: path, configuration: configuration)
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(5))
        timer.setEventHandler { [connection] in _ = try? Self.checkpoint(connection) }
        timer.resume()
    }

    /// A checkpoint now: the WAL's frames, and how many of them are in the database file.
    @discardableResult
    func checkpoint() throws -> (walFrameCount: Int, checkpointedFrameCount: Int) {
        try queue.sync { try Self.checkpoint(connection) }
    }

    private static func checkpoint(_ connection: DatabaseQueue) throws -> (walFrameCount: Int, checkpointedFrameCount: Int) {
        try connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
    }

    /// Stops the timer and closes the connection, before the store's own close.
    func stop() {
        queue.sync { timer.cancel() }
        try? connection.close()
    }
}
