/// The events of one server-side subscription, in sequence order (a pattern's: each
/// stream's in order, streams interleaved).
///
/// Ends after the stream's `COMPLETED`; throws `ReplayClientError.streamFailed` after
/// `FAILED`, `disconnected` if the connection drops. A pattern's subscription goes on when
/// one of its streams ends (`onEnd` hears of it) until it is cancelled. It is iterated once: cancelling the
/// consuming task, or dropping its iterator, unsubscribes and ends it.
public struct ReplaySubscription: AsyncSequence, Sendable {
    public typealias Element = ReplayEvent

    let client: ReplayClient
    let sid: String
    let feed: SubscriptionFeed
    let onGap: (@Sendable (String, ClosedRange<UInt64>) -> Void)?
    /// A pattern's stream that ended: its name, and its failure's message (`nil`: completed).
    let onEnd: (@Sendable (String, String?) -> Void)?
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

    /// Acknowledges `event` as `acknowledge(_:)` does its sequence number, naming its stream
    /// where a pattern's group member must.
    public func acknowledge(_ event: ReplayEvent) async throws {
        try await client.acknowledge(event.sequence, sid: sid, stream: feed.spansStreams ? event.stream : nil)
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
        Iterator(items: feed.events.makeAsyncIterator(), feed: feed, onGap: onGap, onEnd: onEnd, credit: credit)
    }

    public struct Iterator: AsyncIteratorProtocol {
        var items: SubscriptionFeed.Events.AsyncIterator
        let feed: SubscriptionFeed
        let onGap: (@Sendable (String, ClosedRange<UInt64>) -> Void)?
        let onEnd: (@Sendable (String, String?) -> Void)?
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
                case .gap(let stream, let range): onGap?(stream, range)
                case .ended(let stream, let failure): onEnd?(stream, failure)
                case nil: return nil
                }
            }
        }
    }
}
