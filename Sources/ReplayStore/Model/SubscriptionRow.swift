import Foundation

/// A subscription's row as the daemon keeps it (its `subscriptions` table): what it is
/// (`config`) and where its wake and lease stand (`state`), each a JSON document the daemon
/// writes and reads. The store keeps rows with the durability of publishes, in the order of
/// the writer's batches, and gives no meaning to their contents.
public struct SubscriptionRow: Sendable, Equatable {
    public let id: String
    public let config: String
    public let state: String

    public init(id: String, config: String, state: String) {
        self.id = id
        self.config = config
        self.state = state
    }
}

/// The daemon's signing key: an Ed25519 seed and the key id it is published under.
public struct SigningKey: Sendable, Equatable {
    public let kid: String
    public let privateKey: Data

    public init(kid: String, privateKey: Data) {
        self.kid = kid
        self.privateKey = privateKey
    }
}
