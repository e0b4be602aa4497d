import Foundation

/// A subscription's row as the daemon keeps it (its `subscriptions` table): what it is
/// (`config`) and where its wake and lease stand (`state`), each a JSON document the daemon
/// writes and reads. The store keeps rows with the durability of publishes, in the order of
/// the writer's batches, and gives no meaning to their contents.
public struct SubscriptionRow: Sendable, Equatable {
    public let id: String
    public let config: String
    public let state: String
    /// Raised by every write of the row.
    public let revision: Int64

    public init(id: String, config: String, state: String, revision: Int64) {
        self.id = id
        self.config = config
        self.state = state
        self.revision = revision
    }
}

/// A subscription's row written only if it is still as its writer read it: `expected` is
/// the revision read (`nil`: the row must not exist yet), `config` and `state` the new
/// contents (`nil`: remove it). Several daemons sharing a database decide on the same row;
/// the first write wins and the others learn what it wrote.
public struct SubscriptionWrite: Sendable {
    public let id: String
    public let contents: (config: String, state: String)?
    public let expected: Int64?

    public init(id: String, contents: (config: String, state: String)?, expected: Int64?) {
        self.id = id
        self.contents = contents
        self.expected = expected
    }
}

/// What came of a `SubscriptionWrite`.
public enum SubscriptionWritten: Sendable, Equatable {
    /// Written; the row's new revision (0 once removed).
    case written(revision: Int64)
    /// Another write came first: the row as it is now (`nil`: it does not exist).
    case changed(SubscriptionRow?)
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
