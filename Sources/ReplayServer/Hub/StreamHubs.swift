import ReplayModel
import ReplayStore
import ReplaySync

/// Every stream's `StreamHub` (its live state), kept in step with the store by its commit
/// listener.
final class StreamHubs: Sendable {
    private struct State {
        var hubs: [String: StreamHub] = [:]
        /// Pattern readers, told of each stream that appears (see `watch`).
        var watchers: [UInt64: (pattern: StreamPattern, appeared: @Sendable (StreamHub) -> Void)] = [:]
        var nextWatcher: UInt64 = 0
    }

    private let state = Locked(State())
    /// The consumer-group members connected here.
    let groupMembers = GroupMembers()
    private let tailEvents: Int
    private let tailBytes: Int

    init(store: EventStore, tailEvents: Int, tailBytes: Int) {
        self.tailEvents = tailEvents
        self.tailBytes = tailBytes
        store.onCommit { [weak self] batch in self?.apply(batch) }
        store.setLiveReaders { [weak self] name in self?[name]?.hasLiveReaders ?? false }
        state.withLock { state in
            for info in store.streams { state.hubs[info.name] = self.makeHub(info) }
        }
    }

    private func makeHub(_ info: StreamInfo) -> StreamHub {
        StreamHub(info: info, tailEvents: tailEvents, tailBytes: tailBytes)
    }

    /// The hub of a stream, if it exists.
    subscript(name: String) -> StreamHub? {
        state.withLock { $0.hubs[name] }
    }

    /// Every stream's hub, by name.
    var all: [StreamHub] {
        state.withLock { $0.hubs.values.sorted { $0.name < $1.name } }
    }

    /// The hubs of the streams `pattern` matches now, and from now on `appeared` for each
    /// matching stream created later (or deleted and created again: a new hub), on the
    /// writer's thread once the hub holds the commit that created it. Both under one lock,
    /// so no stream falls between the list and the watch. Ends with `unwatch(token)`.
    func watch(
        _ pattern: StreamPattern, appeared: @escaping @Sendable (StreamHub) -> Void
    ) -> (existing: [StreamHub], token: UInt64) {
        state.withLock { state in
            let token = state.nextWatcher
            state.nextWatcher += 1
            state.watchers[token] = (pattern, appeared)
            let existing = state.hubs.values.filter { pattern.matches($0.name) }.sorted { $0.name < $1.name }
            return (existing, token)
        }
    }

    func unwatch(_ token: UInt64) {
        _ = state.withLock { $0.watchers.removeValue(forKey: token) }
    }

    private func apply(_ batch: CommitBatch) {
        for (name, change) in batch.changes {
            let (hub, created, watchers) = state.withLock { state -> (StreamHub?, Bool, [@Sendable (StreamHub) -> Void]) in
                guard let info = change.info else { return (state.hubs.removeValue(forKey: name), false, []) }
                if let hub = state.hubs[name] { return (hub, false, []) }
                let hub = makeHub(info)
                state.hubs[name] = hub
                return (hub, true, state.watchers.values.filter { $0.pattern.matches(name) }.map(\.appeared))
            }
            hub?.apply(change)
            if created, let hub { for appeared in watchers { appeared(hub) } }
        }
    }
}
