import Foundation

/// The listening Unix socket a service manager passed to the daemon (systemd's socket
/// activation): the socket stays systemd's across the daemon's restarts, so a client that
/// connects while no daemon runs waits in its backlog and is served by the next one.
///
/// Read as `sd_listen_fds(3)` reads it, by hand (libsystemd is not a dependency, and the
/// protocol is three environment variables): `LISTEN_PID` must be this process (else the
/// sockets were meant for another), `LISTEN_FDS` sockets start at descriptor 3, and
/// `LISTEN_FDNAMES` names them (`FileDescriptorName=`). The variables are then removed, so
/// that the sources the daemon starts do not take them for theirs, and the descriptors
/// are closed on exec.
///
/// The socket door takes the one that is a listening Unix stream socket. The HTTP door
/// binds `--http` itself: hummingbird's server binds an address or a path and has no way
/// to adopt a listening descriptor, so an inherited TCP socket is refused in words.
public struct InheritedSocket: Sendable, Equatable {
    public let descriptor: Int32
    /// Where it listens, as `getsockname` says.
    public let path: String
    public let name: String

    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
    }

    /// The socket the environment passes, `nil` if it passes none; the variables are
    /// removed either way. A passed descriptor the daemon cannot serve is an error.
    public static func take() throws -> InheritedSocket? {
        let environment = ProcessInfo.processInfo.environment
        defer { for name in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] { unsetenv(name) } }
        return try from(environment, pid: getpid())
    }

    static let firstDescriptor: Int32 = 3

    static func from(_ environment: [String: String], pid: pid_t) throws -> InheritedSocket? {
        guard let listenPID = environment["LISTEN_PID"], listenPID == String(pid),
            let countText = environment["LISTEN_FDS"], let count = Int32(countText), count > 0
        else { return nil }
        let names = environment["LISTEN_FDNAMES"]?.split(separator: ":", omittingEmptySubsequences: false).map(String.init) ?? []
        var found: [InheritedSocket] = []
        for index in 0..<count {
            let descriptor = firstDescriptor + index
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            let name = index < names.count ? names[Int(index)] : "unknown"
            guard let path = listeningUnixPath(descriptor) else {
                throw Refusal(
                    description: "descriptor \(descriptor) ('\(name)') passed by the service manager is not a listening Unix stream socket; "
                        + "replayd takes its socket door from systemd, and binds its HTTP door itself (--http)")
            }
            found.append(InheritedSocket(descriptor: descriptor, path: path, name: name))
        }
        guard found.count == 1, let socket = found.first else {
            throw Refusal(description: "the service manager passed \(found.count) Unix sockets; replayd listens on one (ListenStream= once)")
        }
        return socket
    }

    /// The path a listening Unix stream socket is bound to; `nil` for anything else.
    static func listeningUnixPath(_ descriptor: Int32) -> String? {
        var type: Int32 = 0
        var listening: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &size) == 0, type == Int32(SOCK_STREAM.rawValue) else { return nil }
        size = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0, listening == 1 else { return nil }
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        return withUnsafeBytes(of: address.sun_path) { raw in
            // An abstract socket's name starts with a NUL; shown with '@', as ss(8) does.
            let bytes = Array(raw.prefix(Int(length) - MemoryLayout<sa_family_t>.size))
            if bytes.first == 0 { return "@" + String(decoding: bytes.dropFirst().prefix { $0 != 0 }, as: UTF8.self) }
            return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}
