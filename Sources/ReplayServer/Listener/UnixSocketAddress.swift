import Foundation

/// A Unix socket's address, made once for every place the daemon names one itself (the
/// check for a live daemon on its socket path, the service manager's `NOTIFY_SOCKET`). A
/// name starting with `@` is abstract (its first byte NUL), as systemd writes it.
struct UnixSocketAddress {
    private var address = sockaddr_un()
    /// The address's significant length: the family, the path and its NUL (none after an
    /// abstract name, whose every byte counts).
    let length: socklen_t

    /// `nil` for a path too long for a Unix socket.
    init?(_ path: String) {
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        address.sun_family = sa_family_t(AF_UNIX)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
    }

    /// Calls `body` with the address as the C calls take it.
    func withSockaddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
        withUnsafePointer(to: address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }
}
