import Foundation
import NIOCore

/// A blocking Unix-socket connection with read and write buffers: the load generator runs
/// one thread per connection, the simplest way to drive a server flat out.
final class BufferedSocket {
    let fd: Int32
    var input = ByteBuffer()
    private var output = ByteBuffer()

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        try Self.connect(fd, to: &address, named: path)
    }

    /// A TCP connection to `host:port` (IPv4), for the HTTP front door.
    init(host: String, port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        try Self.connect(fd, to: &address, named: "\(host):\(port)")
    }

    /// Connects `fd` to a `sockaddr_un` or `sockaddr_in`; closes it if that fails.
    private static func connect<Address>(_ fd: Int32, to address: inout Address, named name: String) throws {
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<Address>.size)) == 0
            }
        }
        guard connected else {
            close(fd)
            throw BenchError("cannot connect to \(name): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(fd) }

    func write(_ body: (inout ByteBuffer) -> Void) {
        body(&output)
    }

    func flush() throws {
        while output.readableBytes > 0 {
            let written = output.withUnsafeReadableBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { throw BenchError("write failed: \(String(cString: strerror(errno)))") }
            output.moveReaderIndex(forwardBy: written)
        }
        output.discardReadBytes()
    }

    /// Reads at least one more byte into `input` (blocking).
    func fill() throws {
        input.reserveCapacity(minimumWritableBytes: 64 * 1024)
        let count = input.withUnsafeMutableWritableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { throw BenchError("connection closed") }
        input.moveWriterIndex(forwardBy: count)
    }

    func discardRead() {
        if input.readerIndex > 1 << 20 { input.discardReadBytes() }
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
