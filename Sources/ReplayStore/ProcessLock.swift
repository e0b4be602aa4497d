import Foundation
import ReplayCore

/// An exclusive advisory lock (flock) on `<database>.lock`, held while a store is open, so
/// that a second daemon on the same database is refused with a clear message instead of
/// interleaving its writes. A sidecar file, because SQLite uses POSIX locks on the database
/// itself and closing any other descriptor of that file would drop them.
final class ProcessLock: Sendable {
    private let descriptor: Locked<Int32?>
    let path: String

    init(databasePath: String) throws(StoreError) {
        path = databasePath + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EACCES || errno == EROFS { throw .readOnly(path: databasePath) }
            throw .sqlite(code: errno, message: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))
                .map { "pid \($0.trimmingCharacters(in: .whitespacesAndNewlines))" } ?? "unknown pid"
            close(fd)
            throw .locked(path: databasePath, holder: holder)
        }
        ftruncate(fd, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        descriptor = Locked(fd)
    }

    /// Releases the lock (idempotent). Closing the descriptor releases it; the file stays
    /// (it is harmless, and removing it could race with the next process taking it).
    func release() {
        let fd = descriptor.withLock { fd in
            defer { fd = nil }
            return fd
        }
        if let fd { close(fd) }
    }

    deinit {
        release()
    }
}
