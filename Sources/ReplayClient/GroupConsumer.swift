import Foundation
import ReplayProtocol

/// An event handed to a consumer-group member: handle it, then `ack()` it, or `nack()` it
/// back to the group to be handed out again (to any member).
public struct GroupEvent: Sendable {
    public let event: ReplayEvent
    let subscription: ReplaySubscription

    public var stream: String { event.stream }
    public var sequence: UInt64 { event.sequence }
    public var payload: Data { event.payload }
    public var text: String? { event.text }

    /// Acknowledges this event; returns once that is committed. Throws `invalid_ack` if the
    /// member no longer holds it (its `ack_wait` ran out and another member has it).
    public func ack() async throws {
        try await subscription.acknowledge(event.sequence)
    }

    /// Gives it back, to be handed out again after `delay` seconds (or to the group's
    /// dead-letter stream, after its `max_deliver`).
    public func nack(delay: Double? = nil) async throws {
        try await subscription.giveBack(event.sequence, delay: delay)
    }
}

/// A member of a consumer group, as an `AsyncSequence` of the events handed to it:
///
/// ```swift
/// for try await job in try await client.join("jobs", group: GroupOptions(group: "mailers")) {
///     try await send(job.payload)
///     try await job.ack()
/// }
/// ```
///
/// The member holds at most `max_pending` events unacknowledged (`GroupOptions`): the
/// daemon hands it more as it acknowledges. Ending the iteration (or `cancel()`) leaves the
/// group, and what it held goes to the other members at once.
public struct GroupConsumer: AsyncSequence, Sendable {
    public typealias Element = GroupEvent

    public let subscription: ReplaySubscription

    public func makeAsyncIterator() -> Iterator {
        Iterator(events: subscription.makeAsyncIterator(), subscription: subscription)
    }

    /// Leaves the group (UNSUB); iteration ends.
    public func cancel() async {
        await subscription.cancel()
    }

    public struct Iterator: AsyncIteratorProtocol {
        var events: ReplaySubscription.Iterator
        let subscription: ReplaySubscription

        public mutating func next() async throws -> GroupEvent? {
            try await events.next().map { GroupEvent(event: $0, subscription: subscription) }
        }
    }
}

extension ReplayClient {
    /// Joins the consumer group `options.group` of `stream` (created at `start` on first use,
    /// with the settings `options` names) as a member.
    public func join(_ stream: String, group options: GroupOptions, from start: StartPosition = .all) async throws -> GroupConsumer {
        GroupConsumer(subscription: try await subscribe(stream, from: start, group: options))
    }
}

/// A group member that survives daemon restarts: when the connection drops, it reconnects
/// with exponential backoff and joins the group again under the same member id. Events it
/// held when the connection dropped are handed out again by the daemon (to it or another
/// member) once their `ack_wait` runs out, so a handler may see an event twice: make the
/// work idempotent, as with every work queue. An event read after its connection dropped
/// (it was already on its way) cannot be acknowledged: its `ack()` throws `.disconnected`,
/// and it comes again.
public struct ResumingGroupConsumer: AsyncSequence, Sendable {
    public typealias Element = GroupEvent

    public let socketPath: String
    public let stream: String
    /// The group's options; the member id is fixed here (one of its own if none is given),
    /// so that each reconnection is the same member.
    public let options: GroupOptions
    public let start: StartPosition
    public let initialBackoff: Double
    public let maxBackoff: Double
    public let onReconnect: (@Sendable (any Error) -> Void)?

    public init(
        socketPath: String = ReplayClient.defaultSocketPath, stream: String, group options: GroupOptions, from start: StartPosition = .all,
        initialBackoff: Double = 0.05, maxBackoff: Double = 5, onReconnect: (@Sendable (any Error) -> Void)? = nil
    ) {
        var options = options
        if options.member == nil { options.member = "swift-\(UInt64.random(in: .min ... .max))" }
        self.socketPath = socketPath
        self.stream = stream
        self.options = options
        self.start = start
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.onReconnect = onReconnect
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(configuration: self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let configuration: ResumingGroupConsumer
        var client: ReplayClient?
        var events: GroupConsumer.Iterator?
        var reconnection: Reconnection

        init(configuration: ResumingGroupConsumer) {
            self.configuration = configuration
            self.reconnection = Reconnection(
                initialBackoff: configuration.initialBackoff, maxBackoff: configuration.maxBackoff, onReconnect: configuration.onReconnect)
        }

        public mutating func next() async throws -> GroupEvent? {
            while true {
                try Task.checkCancellation()
                do {
                    if events == nil {
                        let client = try await ReplayClient.connect(to: configuration.socketPath)
                        self.client = client
                        events = try await client.join(configuration.stream, group: configuration.options, from: configuration.start)
                            .makeAsyncIterator()
                    }
                    guard let event = try await events?.next() else { return nil }
                    reconnection.succeeded()
                    return event
                } catch {
                    try await reconnection.recover(from: error, closing: client)
                    (client, events) = (nil, nil)
                }
            }
        }
    }
}
