/// The events of one server-side subscription, in sequence order.
///
/// Ends after the stream's `COMPLETED`; throws `ReplayClientError.streamFailed` after
/// `FAILED`, `disconnected` if the connection drops. Cancelling the consuming task
/// unsubscribes.
public struct ReplaySubscription: AsyncSequence, Sendable {
    public typealias Element = ReplayEvent

    let client: ReplayClient
    let sid: String
    let buffer: EventBuffer
    let onGap: (@Sendable (ClosedRange<UInt64>) -> Void)?

    /// Stops the subscription (UNSUB); iteration ends.
    public func cancel() async {
        await client.unsubscribe(sid)
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(subscription: self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let subscription: ReplaySubscription

        public mutating func next() async throws -> ReplayEvent? {
            let subscription = self.subscription
            while true {
                let item = try await withTaskCancellationHandler {
                    try await subscription.buffer.next()
                } onCancel: {
                    subscription.buffer.finish(.success(()))
                    Task { await subscription.cancel() }
                }
                switch item {
                case .event(let event): return event
                case .gap(let range): subscription.onGap?(range)
                case nil: return nil
                }
            }
        }
    }
}
