import Foundation
import ReplaySync

/// An exclusive lock on `<database>.lock`, held while a store is open, so that a second
/// daemon on the same database is refused with a clear message instead of interleaving its
/// writes. A sidecar file, because SQLite uses POSIX locks on the database itself and
/// closing any other descriptor of that file would drop them.
///
/// The lock is a POSIX record lock (`fcntl(F_SETLK)`), not `flock`, because of children.
/// A `flock` lock belongs to the open file description, which a child shares from `fork`
/// until it `exec`s (close-on-exec acts only then): a store closed while another thread is
/// spawning a process (a source, a test's probe) stayed locked for that moment, and the
/// next open in this very process was refused as "in use by pid <self>". A record lock
/// belongs to the process: a child never holds it, and `close` releases it at once.
///
/// Record locks do not exclude the process that holds them, so a second store on the same
/// file inside one process is refused by `openInProcess` instead, before the file is
/// opened at all (closing any descriptor of a locked file drops the process's lock on it).
final class ProcessLock: Sendable {
    private let descriptor: Locked<Int32?>
    /// The lock file's absolute path, the key in `openInProcess`.
    private let key: String
    let path: String

    /// The lock files this process holds.
    private static let openInProcess = Locked<Set<String>>([])

    init(databasePath: String) throws(StoreError) {
        path = databasePath + ".lock"
        key = Self.absolute(path)
        let key = self.key
        let claimed = Self.openInProcess.withLock { $0.insert(key).inserted }
        guard claimed else { throw .locked(path: databasePath, holder: "pid \(getpid())") }
        do {
            descriptor = Locked(try Self.lock(path, databasePath: databasePath))
        } catch {
            _ = Self.openInProcess.withLock { $0.remove(key) }
            throw error
        }
    }

    private static func lock(_ path: String, databasePath: String) throws(StoreError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            if errno == EACCES || errno == EROFS { throw .readOnly(path: databasePath) }
            throw .sqlite(code: errno, message: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        var request = flock()
        request.l_type = Int16(F_WRLCK)
        request.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, F_SETLK, &request) == 0 else {
            let holder =
                Self.holder(fd)
                ?? (try? String(contentsOfFile: path, encoding: .utf8))
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            close(fd)
            throw .locked(path: databasePath, holder: holder.map { "pid \($0)" } ?? "unknown pid")
        }
        // The pid is also written into the file, for an operator looking without lsof.
        ftruncate(fd, 0)
        let pid = "\(getpid())\n"
        _ = pid.withCString { write(fd, $0, strlen($0)) }
        return fd
    }

    /// The pid of the process holding the lock, as the kernel reports it.
    private static func holder(_ fd: Int32) -> String? {
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        guard fcntl(fd, F_GETLK, &probe) == 0, probe.l_type != Int16(F_UNLCK) else { return nil }
        return "\(probe.l_pid)"
    }

    private static func absolute(_ path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        let resolved = realpath(folder.isEmpty ? "." : folder, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        }
        return (resolved ?? folder) + "/" + (path as NSString).lastPathComponent
    }

    /// Releases the lock (idempotent). Closing the descriptor releases it; the file stays
    /// (it is harmless, and removing it could race with the next process taking it).
    func release() {
        let fd = descriptor.withLock { fd in
            defer { fd = nil }
            return fd
        }
        guard let fd else { return }
        close(fd)
        _ = Self.openInProcess.withLock { $0.remove(key) }
    }

    deinit {
        release()
    }
}
