import Foundation
import NIOCore

/// Who is at the other end of a Unix-socket connection (SO_PEERCRED, Linux).
struct PeerCredentials: Sendable {
    // The layout of Linux's `struct ucred`, which Glibc's module map does not export.
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0

    /// SO_PEERCRED on Linux (also hidden behind _GNU_SOURCE).
    static let optionName: Int32 = 17

    static func of(_ channel: any Channel) async throws -> PeerCredentials {
        guard let provider = channel as? any SocketOptionProvider else {
            throw ReplayServerError("the connection does not expose its peer's credentials")
        }
        return try await provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(optionName)
        ).get()
    }
}
