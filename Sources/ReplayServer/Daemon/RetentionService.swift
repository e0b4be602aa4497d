import Foundation
import ReplayModel
import ReplayStore
import ReplaySync
import ServiceLifecycle

/// Age limits apply to idle streams too: every `interval`, if any stream has a maximum
/// age or an expiry, the writer trims what has grown too old and deletes the streams that
/// expired (a write like any other, in its queue). Events whose own time-to-live ran out
/// (`ttl=`, `event_ttl`) are removed too, a batch at a time while more are expired, so
/// that publishes go on between them; reads never served them meanwhile.
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
                while let next = try? store.nextExpiry(), next <= Timestamp.millis(Date()) {
                    guard (try? await store.expireEvents()) == true else { break }
                }
            }
        }
    }
}
