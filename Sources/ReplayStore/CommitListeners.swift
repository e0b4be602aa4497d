import ReplaySync

/// Who hears about commits. Listeners run on the writer's thread, in commit order, right
/// after each commit: they must only hand the news on (hop to an event loop, wake parked
/// subscribers), never block.
final class CommitListeners: Sendable {
    private let listeners = Locked<[@Sendable (CommitBatch) -> Void]>([])
    private let liveReaders = Locked<(@Sendable (String) -> Bool)?>(nil)

    func add(_ listener: @escaping @Sendable (CommitBatch) -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    /// Whether this process has live readers of a stream (everything has, until told).
    func haveLiveReaders(of stream: String) -> Bool {
        liveReaders.value?(stream) ?? true
    }

    func setLiveReaders(_ body: @escaping @Sendable (String) -> Bool) {
        liveReaders.withLock { $0 = body }
    }

    func notify(_ batch: CommitBatch) {
        let current = listeners.withLock { $0 }
        for listener in current { listener(batch) }
    }
}
