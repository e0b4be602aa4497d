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
        let control: SubscriptionFeedControl

        func produceMore() { control.read(true) }
        func didTerminate() { control.consumerLeft() }
    }

    static let highWatermark = 2048
    static let lowWatermark = 512

    let events: Events
    private let source: Events.Source
    private let control: SubscriptionFeedControl

    /// `reading(false)` asks the connection to stop reading its socket, `reading(true)` to
    /// read again. `abandoned` runs if the consumer stops (cancelled, or its iterator
    /// dropped) before the daemon ended the subscription: the place to unsubscribe.
    init(reading: @escaping @Sendable (Bool) -> Void, abandoned: @escaping @Sendable () -> Void) {
        let control = SubscriptionFeedControl(setReading: reading, abandoned: abandoned)
        let made = Events.makeSequence(
            backPressureStrategy: .init(lowWatermark: Self.lowWatermark, highWatermark: Self.highWatermark),
            finishOnDeinit: true, delegate: Delegate(control: control))
        self.events = made.sequence
        self.source = made.source
        self.control = control
    }

    /// On the event loop.
    func push(_ item: Item) {
        if case .stopProducing = source.yield(item) { control.read(false) }
    }

    /// The daemon ended the subscription, or the connection is gone.
    func finish(_ result: Result<Void, ReplayClientError>) {
        control.endedByDaemon()
        switch result {
        case .success: source.finish()
        case .failure(let error): source.finish(error)
        }
    }
}

/// The feed's two switches: the connection's reading, flipped only when it changes (the
/// producer says "stop" at every event above the high watermark), and who ended the
/// subscription first: the daemon (nothing to undo) or its consumer (unsubscribe).
final class SubscriptionFeedControl: Sendable {
    private let reading = Atomic(true)
    private let ended = Atomic(false)
    private let setReading: @Sendable (Bool) -> Void
    private let abandoned: @Sendable () -> Void

    init(setReading: @escaping @Sendable (Bool) -> Void, abandoned: @escaping @Sendable () -> Void) {
        self.setReading = setReading
        self.abandoned = abandoned
    }

    func read(_ on: Bool) {
        if reading.exchange(on, ordering: .acquiringAndReleasing) != on { setReading(on) }
    }

    func endedByDaemon() {
        ended.store(true, ordering: .releasing)
    }

    func consumerLeft() {
        if !ended.exchange(true, ordering: .acquiringAndReleasing) { abandoned() }
    }
}
