import ReplaySync

/// The group members connected to this daemon, by stream and group: what GROUPS lists
/// beside the members holding events (which the store knows, for every daemon).
final class GroupMembers: Sendable {
    private struct Key: Hashable {
        let stream: String
        let group: String
    }

    /// Each member's subscriptions: a member id may be used by several at once.
    private let members = Locked<[Key: [String: Int]]>([:])

    func joined(_ member: String, group: String, of stream: String) {
        members.withLock { $0[Key(stream: stream, group: group), default: [:]][member, default: 0] += 1 }
    }

    func left(_ member: String, group: String, of stream: String) {
        members.withLock { members in
            let key = Key(stream: stream, group: group)
            members[key]?[member]? -= 1
            if members[key]?[member] == 0 { members[key]?[member] = nil }
            if members[key]?.isEmpty == true { members[key] = nil }
        }
    }

    /// Whether `member` still has a subscription in the group here.
    func isConnected(_ member: String, group: String, of stream: String) -> Bool {
        members.withLock { $0[Key(stream: stream, group: group)]?[member] != nil }
    }

    func connected(group: String, of stream: String) -> [String] {
        members.withLock { $0[Key(stream: stream, group: group)].map { Array($0.keys) } ?? [] }
    }
}
