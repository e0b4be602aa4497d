import ReplayCore
import ReplayStore
import ReplaySync

/// Every stream's `StreamHub` (its live state), kept in step with the store by its commit
/// listener.
final class StreamHubs: Sendable {
    private let hubs = Locked<[String: StreamHub]>([:])
    private let tailEvents: Int
    private let tailBytes: Int

    init(store: EventStore, tailEvents: Int, tailBytes: Int) {
        self.tailEvents = tailEvents
        self.tailBytes = tailBytes
        store.onCommit { [weak self] batch in self?.apply(batch) }
        hubs.withLock { hubs in
            for info in store.streams { hubs[info.name] = self.makeHub(info) }
        }
    }

    private func makeHub(_ info: StreamInfo) -> StreamHub {
        StreamHub(info: info, tailEvents: tailEvents, tailBytes: tailBytes)
    }

    /// The hub of a stream, if it exists.
    subscript(name: String) -> StreamHub? {
        hubs.withLock { $0[name] }
    }

    /// Every stream's hub, by name.
    var all: [StreamHub] {
        hubs.withLock { $0.values.sorted { $0.name < $1.name } }
    }

    private func apply(_ batch: CommitBatch) {
        for (name, change) in batch.changes {
            let hub = hubs.withLock { hubs -> StreamHub? in
                guard let info = change.info else { return hubs.removeValue(forKey: name) }
                if let hub = hubs[name] { return hub }
                let hub = makeHub(info)
                hubs[name] = hub
                return hub
            }
            hub?.apply(change)
        }
    }
}
