import Foundation

/// The reads of a SQLite file in flight, so that its close waits for them and refuses the
/// ones after it.
///
/// GRDB's `DatabasePool.close()` waits for the connections its pool has lent, but a read
/// that looked the pool up just before the close borrows a connection after it, already
/// closed, and SQLite then follows a null connection (a SIGSEGV in `sqlite3_get_autocommit`
/// under `DatabasePool.read`). A derivation's page read ahead, a `VERIFY` or a `BACKUP` on
/// a thread of its own may be reading when the daemon stops.
///
/// `@unchecked Sendable`: its two fields are touched with `condition` held.
final class ReadGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var reads = 0
    private var closed = false

    /// Runs `body` unless the file is closing or closed (`nil`).
    func pass<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T? {
        condition.lock()
        guard !closed else {
            condition.unlock()
            return nil
        }
        reads += 1
        condition.unlock()
        defer {
            condition.lock()
            reads -= 1
            if reads == 0 { condition.broadcast() }
            condition.unlock()
        }
        return try body()
    }

    /// Refuses every read from now on, and returns once those in flight have ended.
    func close() {
        condition.lock()
        closed = true
        while reads > 0 { condition.wait() }
        condition.unlock()
    }
}
