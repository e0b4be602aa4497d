import ReplayCore
import ReplaySync
import ReplayTesting
import Testing

/// Every example of the source articles (../shared/SEMANTICS.md, E1–E20), on virtual time,
/// asserting the exact timed output the articles print.
@Suite("Article examples")
struct ArticleExamplesTests {
    /// A cold signal that sends each (delay, value) relative to its subscription, then
    /// completes after `completeAfter`; logs each subscription as "source: subscribed".
    static func timed(
        _ timeline: Timeline, _ sends: [(Double, String)], completeAfter: Double? = nil
    ) -> Signal<String> {
        Signal { observer in
            timeline.log("source", "subscribed")
            let work = CompositeDisposable()
            for (delay, value) in sends {
                work.add(timeline.scheduler.after(delay) { observer.send(value) })
            }
            if let completeAfter {
                work.add(timeline.scheduler.after(completeAfter) { observer.sendCompleted() })
            }
            work.add { timeline.log("source", "disposed") }
            return work
        }
    }

    @Test func E1_coldSignalRunsItsWorkOncePerSubscriber() {
        let timeline = Timeline()
        let cold = Signal<Int> { observer in
            timeline.log("source", "work")
            observer.send(1); observer.send(2); observer.send(3)
            observer.sendCompleted()
            return Disposables.empty
        }
        timeline.scheduler.at(0.1) { cold.subscribe(timeline.observer("1")) }
        timeline.scheduler.at(1.0) { cold.subscribe(timeline.observer("2")) }
        timeline.scheduler.run()
        #expect(
            timeline.all == [
                .init(0.1, "source", "work"),
                .init(0.1, "1", "1"), .init(0.1, "1", "2"), .init(0.1, "1", "3"), .init(0.1, "1", "completed"),
                .init(1, "source", "work"),
                .init(1, "2", "1"), .init(1, "2", "2"), .init(1, "2", "3"), .init(1, "2", "completed"),
            ])
    }

    @Test func E2_publishedSignalIsSharedAndLateSubscribersMissEarlierValues() {
        let timeline = Timeline()
        let source = Self.timed(timeline, [(1, "1"), (2, "2"), (3, "3")], completeAfter: 4)
        let connection = source.publish()
        timeline.scheduler.at(0) { connection.connect() }
        timeline.scheduler.at(1.1) { connection.signal.subscribe(timeline.observer("1")) }
        timeline.scheduler.at(2.1) { connection.signal.subscribe(timeline.observer("2")) }
        timeline.scheduler.run()
        #expect(
            timeline.all == [
                .init(0, "source", "subscribed"),
                .init(2, "1", "2"),
                .init(3, "1", "3"), .init(3, "2", "3"),
                .init(4, "1", "completed"), .init(4, "2", "completed"),
                .init(4, "source", "disposed"),
            ])
    }

    /// E3: one request feeds title, description and a rendered description; three bindings
    /// and a merge of the three. Cold, the request runs 6 times; after `replayLazily`, once.
    @Test(arguments: [false, true])
    func E3_sideEffectRunsSixTimesColdAndOnceWithReplayLazily(shared: Bool) {
        let requests = Locked(0)
        let timeline = Timeline()
        var fetchData = Signal<[String: String]> { observer in
            requests.withLock { $0 += 1 }
            observer.send(["title": "Hot", "desc": "signals"])
            observer.sendCompleted()
            return Disposables.empty
        }
        if shared { fetchData = fetchData.replayLazily() }
        let title = fetchData.flattenMap { Signal.just($0["title"]!) }
        let desc = fetchData.flattenMap { Signal.just($0["desc"]!) }
        let renderedDesc = desc.flattenMap { Signal.just("<b>\($0)</b>") }
        title.subscribe(timeline.observer("title"))
        desc.subscribe(timeline.observer("desc"))
        renderedDesc.subscribe(timeline.observer("rendered"))
        Signal.merge([title, desc, renderedDesc]).subscribe(timeline.observer("merged"))

        #expect(requests.withLock { $0 } == (shared ? 1 : 6))
        #expect(timeline.values(of: "title") == ["Hot"])
        #expect(timeline.values(of: "desc") == ["signals"])
        #expect(timeline.values(of: "rendered") == ["<b>signals</b>"])
        #expect(timeline.values(of: "merged") == ["Hot", "signals", "<b>signals</b>"])
        #expect(timeline.of("merged").last?.what == "completed")
    }

    @Test func E4_subjectForgetsAndReplaySubjectRemembers() async throws {
        let timeline = Timeline()
        let subject = Subject<String>()
        let s = timeline.scheduler
        s.at(0.1) {
            subject.signal.subscribe(timeline.observer("1"))
            subject.signal.subscribe(timeline.observer("2"))
        }
        s.at(1) { subject.send("package 1") }
        s.at(1.1) {
            subject.signal.subscribe(timeline.observer("3"))
            subject.signal.subscribe(timeline.observer("4"))
        }
        s.at(2) { subject.send("package 2") }
        s.run()
        #expect(
            timeline.all == [
                .init(1, "1", "package 1"), .init(1, "2", "package 1"),
                .init(2, "1", "package 2"), .init(2, "2", "package 2"),
                .init(2, "3", "package 2"), .init(2, "4", "package 2"),
            ])
        // The replay-subject half of E4, shared with the SQLite buffer's suite.
        try await ReplaySubjectConformance { RingBuffer(capacity: $0) }.e4ReplaySubjectGivesHistoryToLateSubscribers()
    }

    /// Source of E5–E7: logs "subscribed", sends A after 1.5, B after 3, completes after 5.
    static func e5Source(_ timeline: Timeline) -> Signal<String> {
        timed(timeline, [(1.5, "A"), (3, "B")], completeAfter: 5)
    }

    static let e5Expected: [Timeline.Record] = [
        .init(2, "source", "subscribed"),
        .init(3.5, "1", "A"),
        .init(5, "1", "B"), .init(5, "2", "B"),
        .init(7, "1", "completed"), .init(7, "2", "completed"),
        .init(7, "source", "disposed"),
    ]

    @Test func E5_subjectSubscribedToColdSourceMakesItHot() {
        let timeline = Timeline()
        let source = Self.e5Source(timeline)
        let subject = Subject<String>()
        timeline.scheduler.at(0) { subject.signal.subscribe(timeline.observer("1")) }
        timeline.scheduler.at(2) { source.subscribe(subject.observer) }
        timeline.scheduler.at(4) { subject.signal.subscribe(timeline.observer("2")) }
        timeline.scheduler.run()
        #expect(timeline.all == Self.e5Expected)
    }

    @Test func E6_multicastConnectIsTheSameAsSubscribingASubject() {
        let timeline = Timeline()
        let connection = Self.e5Source(timeline).multicast(Subject())
        timeline.scheduler.at(0) { connection.signal.subscribe(timeline.observer("1")) }
        timeline.scheduler.at(2) {
            connection.connect()
            connection.connect()  // a second connect is the same connection
        }
        timeline.scheduler.at(4) { connection.signal.subscribe(timeline.observer("2")) }
        timeline.scheduler.run()
        #expect(timeline.all == Self.e5Expected)
    }

    @Test func E7_autoconnectConnectsOnFirstSubscriberAndDisconnectsAfterTheLast() {
        let timeline = Timeline()
        let shared = Self.e5Source(timeline).multicast(Subject()).autoconnect()
        let s = timeline.scheduler
        s.at(2) { shared.subscribe(timeline.observer("1")) }
        s.at(4) { shared.subscribe(timeline.observer("2")) }
        s.run()
        #expect(timeline.all == Self.e5Expected)

        // When every subscriber has gone, the source subscription is disposed; the next
        // subscriber connects again.
        let again = Timeline()
        let refCounted = Self.e5Source(again).multicast(Subject()).autoconnect()
        let subs = Locked<[any Disposable]>([])
        again.scheduler.at(2) { subs.withLock { $0.append(refCounted.subscribe(again.observer("1"))) } }
        again.scheduler.at(4) { subs.withLock { $0.append(refCounted.subscribe(again.observer("2"))) } }
        again.scheduler.at(5.5) { subs.withLock { $0[0].dispose() } }
        again.scheduler.at(6) { subs.withLock { $0[1].dispose() } }
        again.scheduler.at(8) { refCounted.subscribe(again.observer("3")) }
        again.scheduler.advance(to: 10)
        #expect(
            again.all == [
                .init(2, "source", "subscribed"),
                .init(3.5, "1", "A"),
                .init(5, "1", "B"), .init(5, "2", "B"),
                .init(6, "source", "disposed"),
                .init(8, "source", "subscribed"),
                .init(9.5, "3", "A"),
            ])
    }

    @Test func E8_publishReplayReplayLastAndReplayLazily() {
        let timeline = Timeline()
        let runs = Locked(0)
        let source = Signal<Int> { observer in
            runs.withLock { $0 += 1 }
            observer.send(1); observer.send(2); observer.send(3)
            return Disposables.empty  // stays open, like a live feed
        }

        let published = source.publish()
        published.connect()
        published.signal.subscribe(timeline.observer("publish"))
        #expect(timeline.values(of: "publish") == [], "publish: a late subscriber gets no history")

        let replayed = source.replay()
        replayed.subscribe(timeline.observer("replay"))
        #expect(timeline.values(of: "replay") == ["1", "2", "3"])

        let last = source.replayLast()
        last.subscribe(timeline.observer("replayLast"))
        #expect(timeline.values(of: "replayLast") == ["3"])

        #expect(runs.withLock { $0 } == 3, "publish, replay and replayLast each connected once")
        let lazy = source.replayLazily()
        #expect(runs.withLock { $0 } == 3, "replayLazily does no work before a subscription")
        lazy.subscribe(timeline.observer("lazy 1"))
        lazy.subscribe(timeline.observer("lazy 2"))
        #expect(runs.withLock { $0 } == 4)
        #expect(timeline.values(of: "lazy 1") == ["1", "2", "3"])
        #expect(timeline.values(of: "lazy 2") == ["1", "2", "3"])
    }

    @Test func E9_hotPipeDeliversOnlyWhatIsSentWhileSubscribed() {
        let timeline = Timeline()
        let pipe = Subject<String>()
        let s = timeline.scheduler
        s.at(0) { pipe.signal.subscribe(timeline.observer("2")) }
        s.at(0.1) { pipe.signal.subscribe(timeline.observer("1")) }
        s.at(1) { pipe.send("p1") }
        s.at(1.1) { pipe.signal.subscribe(timeline.observer("3")) }
        s.at(2) { pipe.send("p2") }
        s.run()
        #expect(
            timeline.all == [
                .init(1, "2", "p1"), .init(1, "1", "p1"),
                .init(2, "2", "p2"), .init(2, "1", "p2"), .init(2, "3", "p2"),
            ])
    }

    @Test func E10_coldProducerRunsOncePerStartRelativeToEachStart() {
        let timeline = Timeline()
        let producer = Self.timed(timeline, [(1, "p1"), (2, "p2")])
        timeline.scheduler.at(2) { producer.subscribe(timeline.observer("first")) }
        timeline.scheduler.at(3) { producer.subscribe(timeline.observer("second")) }
        timeline.scheduler.run()
        #expect(
            timeline.all == [
                .init(2, "source", "subscribed"),
                .init(3, "source", "subscribed"),
                .init(3, "first", "p1"),
                .init(4, "first", "p2"), .init(4, "second", "p1"),
                .init(5, "second", "p2"),
            ])
    }

    @Test func E11_bufferReplaysToLateSubscriber() async throws {
        try await ReplaySubjectConformance { RingBuffer(capacity: $0) }.e11BufferReplaysToLateSubscriber()
    }

    @Test func E12_hotSignalSendingWhileBeingCreatedIsMissed() {
        let timeline = Timeline()
        let immediate = Subject<String>()
        immediate.send("Hello")  // while being created: nobody listens yet
        immediate.signal.subscribe(timeline.observer("immediate"))

        let delayed = Subject<String>()
        timeline.scheduler.after(1) { delayed.send("Hello") }
        delayed.signal.subscribe(timeline.observer("delayed"))
        timeline.scheduler.run()
        #expect(timeline.all == [.init(1, "delayed", "Hello")])
    }

    @Test func E13_bufferProducesOnceForEverySubscriber() {
        let timeline = Timeline()
        let buffer = ReplaySubject<String>(capacity: nil)
        timeline.log("buffer", "produce Hello")
        buffer.send("Hello")
        timeline.scheduler.at(2) { buffer.signal.subscribe(timeline.observer("1")) }
        timeline.scheduler.at(4) { buffer.signal.subscribe(timeline.observer("2")) }
        timeline.scheduler.run()
        #expect(
            timeline.all == [
                .init(0, "buffer", "produce Hello"), .init(2, "1", "Hello"), .init(4, "2", "Hello"),
            ])
    }

    @Test func E14_replayLazilyStartsOnFirstSubscriptionOnly() {
        let timeline = Timeline()
        let hello = Signal<String> { observer in
            timeline.log("source", "send hello")
            observer.send("Hello")
            return Disposables.empty
        }.replayLazily(capacity: 1)
        timeline.scheduler.at(2) { hello.subscribe(timeline.observer("1")) }
        timeline.scheduler.at(4) { hello.subscribe(timeline.observer("2")) }
        timeline.scheduler.run()
        #expect(
            timeline.all == [
                .init(2, "source", "send hello"), .init(2, "1", "Hello"), .init(4, "2", "Hello"),
            ])
    }

    @Test func E15_capacityLimitsReplayAndReplayLazilyStarterSeesEverything() async throws {
        try await ReplaySubjectConformance { RingBuffer(capacity: $0) }.e15CapacityLimitsTheReplay()

        let timeline = Timeline()
        let abc = Signal<String> { observer in
            for value in ["A", "B", "C"] { observer.send(value) }
            return Disposables.empty
        }.replayLazily(capacity: 1)
        timeline.scheduler.at(1) { abc.subscribe(timeline.observer("starter")) }
        timeline.scheduler.at(2) { abc.subscribe(timeline.observer("later")) }
        timeline.scheduler.run()
        #expect(timeline.values(of: "starter") == ["A", "B", "C"])
        #expect(timeline.all.filter { $0.who == "later" } == [.init(2, "later", "C")])
    }

    @Test func E16_replaySubjectKeepsValuesAndMulticastMakesColdHot() {
        let timeline = Timeline()
        let connection = Self.e5Source(timeline).multicast(ReplaySubject())
        timeline.scheduler.at(2) { connection.connect() }
        timeline.scheduler.at(4) { connection.signal.subscribe(timeline.observer("1")) }
        timeline.scheduler.at(8) { connection.signal.subscribe(timeline.observer("2")) }
        timeline.scheduler.run()
        #expect(
            timeline.all == [
                .init(2, "source", "subscribed"),
                .init(4, "1", "A"),
                .init(5, "1", "B"),
                .init(7, "1", "completed"),
                .init(7, "source", "disposed"),
                .init(8, "2", "A"), .init(8, "2", "B"), .init(8, "2", "completed"),
            ])
    }

    @Test func E17_createSignalDisposableRunsOnceAfterCompletionOrOnEarlierDisposal() {
        let timeline = Timeline()
        let signal = Signal<Int> { observer in
            observer.send(1); observer.send(2); observer.send(3)
            observer.sendCompleted()
            return Disposables.action { timeline.log("signal", "stopped") }
        }
        let subscription = signal.subscribe(timeline.observer("sub"))
        subscription.dispose()
        #expect(timeline.all.map(\.what) == ["1", "2", "3", "completed", "stopped"])

        let early = Timeline()
        let slow = Signal<Int> { observer in
            let work = CompositeDisposable()
            for n in 1...3 { work.add(early.scheduler.after(Double(n)) { observer.send(n) }) }
            work.add { early.log("signal", "stopped") }
            return work
        }
        let running = slow.subscribe(early.observer("sub"))
        early.scheduler.at(1.5) { running.dispose() }
        early.scheduler.run()
        #expect(early.all == [.init(1, "sub", "1"), .init(1.5, "signal", "stopped")])
    }

    @Test func E18_operatorsSubscribeToTheirSourceOnlyWhenSubscribed() {
        let subscriptions = Locked(0)
        let source = Signal<Int> { observer in
            subscriptions.withLock { $0 += 1 }
            observer.send(1); observer.send(2); observer.send(3)
            observer.sendCompleted()
            return Disposables.empty
        }
        let scheduler = TestScheduler()
        let chains: [Signal<Int>] = [
            source.map { $0 * 2 },
            source.filter { $0 > 1 },
            source.flattenMap { .just($0) },
            Signal<Signal<Int>>.just(source).flatten(),
            Signal<Signal<Int>>.just(source).switchToLatest(),
            source.scan(start: 0, reduce: +),
            source.throttle(interval: 0.3, on: scheduler),
        ]
        #expect(subscriptions.withLock { $0 } == 0, "building a chain subscribes to nothing")
        for (index, chain) in chains.enumerated() {
            chain.subscribe()
            #expect(subscriptions.withLock { $0 } == index + 1)
        }
    }

    /// E18's search example: text → throttle(0.3) → search → scan(accumulate).
    @Test func E18_searchExampleThrottlesThenSearchesThenAccumulates() {
        let timeline = Timeline()
        let text = Subject<String>()
        let searches = Locked<[String]>([])
        let results = text.signal
            .throttle(interval: 0.3, on: timeline.scheduler)
            .flattenMap { query in
                searches.withLock { $0.append(query) }
                return Signal.just("results for \(query)")
            }
            .scan(start: [String]()) { $0 + [$1] }
            .map { $0.joined(separator: ", ") }
        results.subscribe(timeline.observer("ui"))
        let s = timeline.scheduler
        s.at(0.0) { text.send("s") }
        s.at(0.1) { text.send("sw") }
        s.at(0.2) { text.send("swi") }
        s.at(1.0) { text.send("swift") }
        s.run()
        #expect(searches.withLock { $0 } == ["swi", "swift"])
        #expect(
            timeline.all == [
                .init(0.5, "ui", "results for swi"),
                .init(1.3, "ui", "results for swi, results for swift"),
            ])
    }

    @Test func E19_commandExecutionsAreHotAndReportExecutingAndErrors() {
        let timeline = Timeline()
        let s = timeline.scheduler
        let runs = Locked(0)
        let command = Command<Int, String> { input in
            Signal { observer in
                runs.withLock { $0 += 1 }
                return s.after(1) {
                    if input < 0 {
                        observer.sendFailed(TestFailure("negative"))
                    } else {
                        observer.send("done \(input)")
                        observer.sendCompleted()
                    }
                }
            }
        }
        command.executing.subscribe(timeline.observer("executing"))
        command.errors.map { "\($0)" }.subscribe(timeline.observer("errors"))
        command.executionSignals.flatten().subscribe(timeline.observer("executions"))

        s.at(1) {
            let execution = command.execute(1)
            execution.subscribe(timeline.observer("caller"))
            command.execute(2).subscribe(timeline.observer("refused"))
        }
        s.at(3) { command.execute(-1) }
        s.run()
        #expect(runs.withLock { $0 } == 2, "each execution runs once, refused ones never")
        #expect(
            timeline.all == [
                .init(0, "executing", "false"),
                .init(1, "executing", "true"),
                .init(1, "refused", "failed: the command is executing and does not allow concurrent execution"),
                .init(2, "executions", "done 1"),
                .init(2, "caller", "done 1"),
                .init(2, "caller", "completed"),
                .init(2, "executing", "false"),
                .init(3, "executing", "true"),
                .init(4, "errors", "negative"),
                .init(4, "executing", "false"),
            ])
    }

    @Test func E19_concurrentCommandAllowsOverlappingExecutions() {
        let command = Command<Int, Int>(allowsConcurrentExecution: true) { _ in .never }
        let refused = Locked(false)
        command.execute(1).subscribe(failed: { _ in refused.withLock { $0 = true } })
        command.execute(2).subscribe(failed: { _ in refused.withLock { $0 = true } })
        #expect(refused.withLock { $0 } == false)
    }

    @Test func E20_channelCarriesValuesBothWays() {
        let timeline = Timeline()
        let channel = Channel<String>()
        channel.following.send("initial model value")
        channel.leading.signal.subscribe(timeline.observer("view"))
        channel.following.signal.subscribe(timeline.observer("model"))
        channel.leading.send("typed by user")
        channel.following.send("loaded from server")
        #expect(timeline.values(of: "view") == ["initial model value", "loaded from server"])
        #expect(timeline.values(of: "model") == ["typed by user"])
    }
}
