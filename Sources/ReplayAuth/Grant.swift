import ReplayModel

/// What a principal may do, by stream: the operations are few and named the same for both
/// doors (docs/SECURITY.md has the mapping of requests and commands to them).
public enum StreamOperation: String, Sendable, CaseIterable, Codable {
    /// GET, HEAD, SSE, long-poll; SUB.
    case read
    /// POST; PUB.
    case write
    /// Create, delete, close, forks, groups, subscriptions.
    case admin
    /// Durable Streams workers: claiming a subscription's wake.
    case claim
}

/// Operations on the streams a pattern matches (the glob of pattern subscriptions).
public struct Grant: Sendable, Equatable {
    public let pattern: StreamPattern
    public let operations: Set<StreamOperation>

    public init(pattern: StreamPattern, operations: Set<StreamOperation>) {
        self.pattern = pattern
        self.operations = operations
    }
}

/// Who is asking: a verified token's subject and grants, or anyone where no rule applies.
public struct Principal: Sendable, Equatable {
    public let name: String
    /// `nil`: everything (no token rules, or the daemon's own `--http-token`).
    public let grants: [Grant]?
    /// The token's own limits (its `limits` claim), over the daemon's for every client.
    public let limits: ClientLimits

    public static let unrestricted = Principal(name: "-", grants: nil)

    public init(name: String, grants: [Grant]?, limits: ClientLimits = .none) {
        self.name = name
        self.grants = grants
        self.limits = limits
    }

    /// The one decision both doors ask: may this principal do `operation` on `stream`?
    public func may(_ operation: StreamOperation, on stream: String) -> Bool {
        guard let grants else { return true }
        // Signed checkpoints are public: whoever holds one must be able to find it again.
        if operation == .read && stream == Checkpoint.stream { return true }
        return grants.contains { $0.operations.contains(operation) && $0.pattern.matches(stream) }
    }

    /// Whether it may do `operation` on every stream `pattern` matches, now or later: a
    /// grant on `**`, on the same pattern, or on `prefix/**` where the pattern begins with
    /// that literal prefix. (Conservative: a pattern that is covered only by the union of
    /// several grants is refused.)
    public func may(_ operation: StreamOperation, onEvery pattern: StreamPattern) -> Bool {
        guard let grants else { return true }
        let text = pattern.description
        return grants.contains { grant in
            guard grant.operations.contains(operation) else { return false }
            let granted = grant.pattern.description
            if granted == "**" || granted == text { return true }
            guard granted.hasSuffix("/**") else { return false }
            let prefix = granted.dropLast(2)
            return !prefix.contains("*") && text.hasPrefix(prefix)
        }
    }

    /// Whether it may do `operation` on every stream there is or will be (a grant on `**`):
    /// what daemon-wide objects (subscriptions, the metrics) ask.
    public func mayEverywhere(_ operation: StreamOperation) -> Bool {
        guard let grants else { return true }
        return grants.contains { $0.operations.contains(operation) && $0.pattern.description == "**" }
    }

    /// The principal of the request being served (set by the HTTP door's middleware).
    @TaskLocal public static var current = Principal.unrestricted
}
