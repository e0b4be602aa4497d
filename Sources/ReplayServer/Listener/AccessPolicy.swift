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
