import ReplaySync

/// Who hears about commits. Listeners run on the writer's thread, in commit order, right
/// after each commit: they must only hand the news on (hop to an event loop, wake parked
/// subscribers), never block.
final class CommitListeners: Sendable {
    private let listeners = Locked<[@Sendable (CommitBatch) -> Void]>([])

    func add(_ listener: @escaping @Sendable (CommitBatch) -> Void) {
        listeners.withLock { $0.append(listener) }
    }

    func notify(_ batch: CommitBatch) {
        let current = listeners.withLock { $0 }
        for listener in current { listener(batch) }
    }
}
