/// The events of one server-side subscription, in sequence order.
///
/// Ends after the stream's `COMPLETED`; throws `ReplayClientError.streamFailed` after
/// `FAILED`, `disconnected` if the connection drops. It is iterated once: cancelling the
/// consuming task, or dropping its iterator, unsubscribes and ends it.
public struct ReplaySubscription: AsyncSequence, Sendable {
    public typealias Element = ReplayEvent

    let client: ReplayClient
    let sid: String
    let feed: SubscriptionFeed
    let onGap: (@Sendable (ClosedRange<UInt64>) -> Void)?
    /// A windowed subscription's grants; `nil` without a window.
    let credit: WindowCredit?

    /// For a durable subscription: acknowledges every event up to `sequence` for its
    /// consumer, and returns once that position is committed. Cumulative; it never goes
    /// back (`invalid_ack`), nor past the stream's last event.
    ///
    /// For a group member: acknowledges that one event, which it must hold (`invalid_ack`
    /// otherwise: its time ran out and another member has it), once committed.
    public func acknowledge(_ sequence: UInt64) async throws {
        try await client.acknowledge(sequence, sid: sid)
    }

    /// For a group member: gives the event back to the group, to be handed out again (to
    /// any member) after `delay` seconds, or to the dead-letter stream after `max_deliver`.
    public func giveBack(_ sequence: UInt64, delay: Double? = nil) async throws {
        try await client.giveBack(sequence, delay: delay, sid: sid)
    }

    /// Stops the subscription (UNSUB); iteration ends.
    public func cancel() async {
        feed.finish(.success(()))
        await client.unsubscribe(sid)
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(items: feed.events.makeAsyncIterator(), feed: feed, onGap: onGap, credit: credit)
    }

    public struct Iterator: AsyncIteratorProtocol {
        var items: SubscriptionFeed.Events.AsyncIterator
        let feed: SubscriptionFeed
        let onGap: (@Sendable (ClosedRange<UInt64>) -> Void)?
        let credit: WindowCredit?

        public mutating func next() async throws -> ReplayEvent? {
            while true {
                let item: SubscriptionFeed.Item?
                do {
                    item = try await items.next()
                } catch is CancellationError {
                    return nil  // the consumer's task was cancelled: the feed unsubscribed
                }
                if item != nil { feed.took() }
                switch item {
                case .event(let event):
                    credit?.took()
                    return event
                case .gap(let range): onGap?(range)
                case nil: return nil
                }
            }
        }
    }
}
