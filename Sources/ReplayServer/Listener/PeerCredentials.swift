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

/// Who may connect: everyone who can open the socket file, or only the listed users and
/// groups (checked on each connection against the peer's credentials).
public struct AccessPolicy: Sendable, Equatable {
    public var allowedUIDs: Set<UInt32> = []
    public var allowedGIDs: Set<UInt32> = []

    public init(allowedUIDs: Set<UInt32> = [], allowedGIDs: Set<UInt32> = []) {
        self.allowedUIDs = allowedUIDs
        self.allowedGIDs = allowedGIDs
    }

    /// No list: the socket file's permissions decide alone.
    var isOpen: Bool { allowedUIDs.isEmpty && allowedGIDs.isEmpty }

    func allows(_ peer: PeerCredentials) -> Bool {
        isOpen || allowedUIDs.contains(peer.uid) || allowedGIDs.contains(peer.gid)
    }
}

struct ReplayServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
