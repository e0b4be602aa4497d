import NIOCore
import Synchronization

/// The events of one subscription on their way from the connection (its event loop) to
/// the consumer's task: NIO's `NIOThrowingAsyncSequenceProducer`.
///
/// A windowed subscription (`SUB … window=<n>`, the default with a daemon that has them)
/// is bounded by its window: the daemon sends at most that many events beyond what the
/// consumer took (`WindowCredit` grants more as it takes them), so the feed holds at most
/// a window and the connection keeps reading for the other subscriptions. A consumer that
/// falls behind holds back only its own events.
///
/// Without a window (a daemon that predates them, or a group member, bounded by its
/// `max_pending`), high and low watermarks: above the high one the connection stops
/// reading its socket (`autoRead` off), so the daemon stops sending and its cursor waits;
/// below the low one it reads again. That holds back every subscription of the connection.
final class SubscriptionFeed: Sendable {
    enum Item: Sendable {
        case event(ReplayEvent)
        case gap(stream: String, ClosedRange<UInt64>)
        /// One stream of a pattern's subscription ended (its failure's message, or `nil`:
        /// completed); the subscription goes on with the others.
        case ended(stream: String, failure: String?)
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
    /// Set for a windowed subscription: the window bounds the feed, not the socket.
    let windowed: Bool
    /// Set for a pattern's subscription: a stream's end ends only that stream's part.
    let spansStreams: Bool
    /// Events pushed and not yet taken by the consumer (a windowed feed's never exceed
    /// its window).
    private let held = Atomic<Int>(0)
    var heldEvents: Int { held.load(ordering: .relaxed) }

    /// `reading(false)` asks the connection to stop reading its socket, `reading(true)` to
    /// read again. `abandoned` runs if the consumer stops (cancelled, or its iterator
    /// dropped) before the daemon ended the subscription: the place to unsubscribe.
    init(
        windowed: Bool, spansStreams: Bool = false, reading: @escaping @Sendable (Bool) -> Void, abandoned: @escaping @Sendable () -> Void
    ) {
        self.windowed = windowed
        self.spansStreams = spansStreams
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
        held.add(1, ordering: .relaxed)
        if case .stopProducing = source.yield(item), !windowed { control.read(false) }
    }

    /// The consumer took one item.
    func took() {
        held.subtract(1, ordering: .relaxed)
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
