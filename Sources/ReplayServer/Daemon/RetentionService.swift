import ReplayStore
import ReplaySync
import ServiceLifecycle

/// Age limits apply to idle streams too: every `interval`, if any stream has a maximum
/// age or an expiry, the writer trims what has grown too old and deletes the streams that
/// expired (a write like any other, in its queue).
/// Stops at the group's graceful shutdown.
final class RetentionService: Service, Sendable {
    private let store: EventStore
    private let interval: Duration
    private let started = Locked(false)

    init(store: EventStore, interval: Duration = .seconds(1)) {
        self.store = store
        self.interval = interval
    }

    func run() async throws {
        try started.withLock { started in
            guard !started else { throw ReplayServerError("the retention service runs once") }
            started = true
        }
        let (store, interval) = (self.store, self.interval)
        try? await cancelWhenGracefulShutdown {
            while true {
                try await Task.sleep(for: interval)
                if store.streams.contains(where: { $0.config.maxAge != nil || $0.config.expiry != nil }) {
                    try? await store.enforceRetention()
                }
            }
        }
    }
}
