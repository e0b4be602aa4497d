import NIOCore
import Synchronization

/// The events of one subscription on their way from the connection (its event loop) to
/// the consumer's task: NIO's `NIOThrowingAsyncSequenceProducer` with high and low
/// watermarks. Above the high one the connection stops reading its socket (`autoRead`
/// off), so the daemon stops sending and its cursor waits; below the low one it reads again.
///
/// One connection carries every subscription of a client: a consumer that falls behind
/// holds back the others' events on that connection too (open another for independence).
final class SubscriptionFeed: Sendable {
    enum Item: Sendable {
        case event(ReplayEvent)
        case gap(ClosedRange<UInt64>)
    }

    typealias Events = NIOThrowingAsyncSequenceProducer<
        Item, any Error, NIOAsyncSequenceProducerBackPressureStrategies.HighLowWatermark, Delegate
    >

    struct Delegate: NIOAsyncSequenceProducerDelegate {
        let reading: ReadingSwitch
        let feed: SubscriptionFeedEnd

        func produceMore() {
            reading.set(true)
        }

        func didTerminate() {
            feed.consumerLeft()
        }
    }

    static let highWatermark = 2048
    static let lowWatermark = 512

    let events: Events
    private let source: Events.Source
    private let reading: ReadingSwitch
    private let end: SubscriptionFeedEnd

    /// `reading(false)` asks the connection to stop reading its socket, `reading(true)` to
    /// read again. `abandoned` runs if the consumer stops (cancelled, or its iterator
    /// dropped) before the daemon ended the subscription: the place to unsubscribe.
    init(reading: @escaping @Sendable (Bool) -> Void, abandoned: @escaping @Sendable () -> Void) {
        let end = SubscriptionFeedEnd(abandoned: abandoned)
        let reading = ReadingSwitch(reading)
        let made = Events.makeSequence(
            backPressureStrategy: .init(lowWatermark: Self.lowWatermark, highWatermark: Self.highWatermark),
            finishOnDeinit: true, delegate: Delegate(reading: reading, feed: end))
        self.events = made.sequence
        self.source = made.source
        self.reading = reading
        self.end = end
    }

    /// On the event loop.
    func push(_ item: Item) {
        if case .stopProducing = source.yield(item) { reading.set(false) }
    }

    /// The daemon ended the subscription, or the connection is gone.
    func finish(_ result: Result<Void, ReplayClientError>) {
        end.endedByDaemon()
        switch result {
        case .success: source.finish()
        case .failure(let error): source.finish(error)
        }
    }
}

/// Who ended a subscription first: the daemon (nothing to undo) or its consumer (unsubscribe).
final class SubscriptionFeedEnd: Sendable {
    private let ended = Atomic(false)
    private let abandoned: @Sendable () -> Void

    init(abandoned: @escaping @Sendable () -> Void) {
        self.abandoned = abandoned
    }

    func endedByDaemon() {
        ended.store(true, ordering: .releasing)
    }

    func consumerLeft() {
        if !ended.exchange(true, ordering: .acquiringAndReleasing) { abandoned() }
    }
}

/// The connection's reading, switched only when it changes (the producer says "stop" at
/// every event above the high watermark).
final class ReadingSwitch: Sendable {
    private let on = Atomic(true)
    private let apply: @Sendable (Bool) -> Void

    init(_ apply: @escaping @Sendable (Bool) -> Void) {
        self.apply = apply
    }

    func set(_ reading: Bool) {
        if on.exchange(reading, ordering: .acquiringAndReleasing) != reading { apply(reading) }
    }
}
