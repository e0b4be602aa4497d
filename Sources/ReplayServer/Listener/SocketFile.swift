import Foundation

/// The socket file's life: refuse to take over a live daemon's socket, replace a stale one
/// left by a crash, and remove ours on the way out.
enum SocketFile {
    struct Error: Swift.Error, CustomStringConvertible {
        let description: String
    }

    /// Makes `path` free for a new daemon, or explains why it is not.
    static func prepare(_ path: String) throws {
        guard path.utf8.count < 108 else {
            throw Error(description: "socket path \(path) is too long for a Unix socket (at most 107 bytes); choose a shorter --socket")
        }
        var status = stat()
        guard lstat(path, &status) == 0 else { return }  // nothing there
        guard (status.st_mode & S_IFMT) == S_IFSOCK else {
            throw Error(description: "\(path) exists and is not a socket; remove it or choose another --socket")
        }
        if isAlive(path) {
            throw Error(description: "another replayd is already running on \(path) (it accepted a connection); stop it first or choose another --socket")
        }
        // A socket nobody listens on: left by a daemon that crashed.
        guard unlink(path) == 0 || errno == ENOENT else {
            throw Error(description: "cannot remove the stale socket \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Whether a process accepts connections on `path`.
    static func isAlive(_ path: String) -> Bool {
        guard let address = UnixSocketAddress(path) else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return address.withSockaddr { connect(fd, $0, $1) } == 0
    }

    /// Removes the socket file if it is still ours (the inode we bound).
    static func remove(_ path: String, inode: ino_t?) {
        var status = stat()
        guard lstat(path, &status) == 0, inode == nil || status.st_ino == inode else { return }
        unlink(path)
    }

    /// A listening socket bound at `path` with exactly `mode`, whatever the umask: bound,
    /// given its mode, and only then listening, so no client connects before the mode is
    /// final (a connect before `listen` is refused). The process's umask is never changed:
    /// it is shared by every thread, and narrowing it around the bind made whatever another
    /// thread created meanwhile (a file, a directory, a child's own files) lose its modes.
    static func listen(at path: String, mode: mode_t, backlog: Int32) throws -> Int32 {
        guard let address = UnixSocketAddress(path) else {
            throw Error(description: "socket path \(path) is too long for a Unix socket (at most 107 bytes); choose a shorter --socket")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw Error(description: "cannot make a socket: \(String(cString: strerror(errno)))") }
        func fail(_ what: String) -> Error {
            let reason = String(cString: strerror(errno))
            close(fd)
            return Error(description: "cannot \(what) \(path): \(reason)")
        }
        // The socket's own mode, which bind narrows by the umask: never wider than `mode`.
        fchmod(fd, mode)
        guard address.withSockaddr({ Glibc.bind(fd, $0, $1) }) == 0 else { throw fail("bind") }
        guard chmod(path, mode) == 0 else { throw fail("set the mode of") }
        guard Glibc.listen(fd, backlog) == 0 else { throw fail("listen on") }
        return fd
    }

    static func inode(_ path: String) -> ino_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_ino : nil
    }
}
