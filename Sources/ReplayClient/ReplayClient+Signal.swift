import ReplayCore
import ReplayProtocol

extension ReplayClient {
    /// The stream as a cold core `Signal`: each subscription of the signal is one
    /// server-side subscription, so the core's operators (and its `replayLazily`,
    /// `multicast`…) compose with remote streams. Disposing unsubscribes.
    ///
    /// ```swift
    /// client.signal("orders").map { $0.text ?? "" }.filter { $0.contains("paid") }
    ///     .subscribe(next: { print($0) })
    /// ```
    public func signal(_ stream: String, from start: StartPosition = .all) -> Signal<ReplayEvent> {
        Signal(RemoteEvents(client: self, stream: stream, start: start))
    }
}

/// Subscribes when iteration starts (not when made), so each iteration is one subscription.
struct RemoteEvents: AsyncSequence, Sendable {
    typealias Element = ReplayEvent

    let client: ReplayClient
    let stream: String
    let start: StartPosition

    func makeAsyncIterator() -> Iterator {
        Iterator(source: self)
    }

    struct Iterator: AsyncIteratorProtocol {
        let source: RemoteEvents
        var events: ReplaySubscription.Iterator?

        mutating func next() async throws -> ReplayEvent? {
            if events == nil {
                events = try await source.client.subscribe(source.stream, from: source.start).makeAsyncIterator()
            }
            return try await events?.next()
        }
    }
}
