import ReplayCore
import ReplayTesting
import Testing

@Suite("Combining operators")
struct CombiningOperatorTests {
    @Test func mergeInterleavesByTimeAndCompletesWhenAllDid() {
        let timeline = Timeline()
        let s = timeline.scheduler
        let a = Signal.after(1, on: s, value: "a")
        let b = Signal.after(2, on: s, value: "b")
        Signal.merge([b, a]).subscribe(timeline.observer("x"))
        s.run()
        #expect(timeline.all == [.init(1, "x", "a"), .init(2, "x", "b"), .init(2, "x", "completed")])
    }

    @Test func mergeFailsAsSoonAsOneInnerFails() {
        let timeline = Timeline()
        let s = timeline.scheduler
        let slow = Signal.after(5, on: s, value: "never seen")
        let failing = Signal<String>.failure(TestFailure("inner")).delay(1, on: s)
        Signal.merge([slow, Signal.after(0.5, on: s, value: "x").concat(failing)])
            .subscribe(timeline.observer("x"))
        s.run()
        #expect(timeline.all == [.init(0.5, "x", "x"), .init(0.5, "x", "failed: inner")])
    }

    @Test func concatSubscribesToTheNextOnlyAfterCompletion() {
        let timeline = Timeline()
        let s = timeline.scheduler
        let second = ArticleExamplesTests.timed(timeline, [(1, "second")], completeAfter: 1)
        Signal.after(2, on: s, value: "first").concat(second).subscribe(timeline.observer("x"))
        s.run()
        #expect(
            timeline.all == [
                .init(2, "x", "first"), .init(2, "source", "subscribed"),
                .init(3, "x", "second"), .init(3, "x", "completed"), .init(3, "source", "disposed"),
            ])
    }

    @Test func flattenMapMergesInnerSignals() {
        let timeline = Timeline()
        Signal.sequence([1, 2]).flattenMap { Signal.sequence([$0, $0 * 10]) }.subscribe(timeline.observer("x"))
        #expect(timeline.all.map(\.what) == ["1", "10", "2", "20", "completed"])
    }

    @Test func switchToLatestFollowsOnlyTheNewestInnerSignal() {
        let timeline = Timeline()
        let s = timeline.scheduler
        let outer = Subject<Signal<String>>()
        outer.signal.switchToLatest().subscribe(timeline.observer("x"))
        s.at(0) { outer.send(ArticleExamplesTests.timed(timeline, [(1, "old 1"), (3, "old 2")])) }
        s.at(2) { outer.send(Signal.after(2, on: s, value: "new")) }
        s.at(2.5) { outer.sendCompleted() }
        s.run()
        #expect(
            timeline.all == [
                .init(0, "source", "subscribed"),
                .init(1, "x", "old 1"),
                .init(2, "source", "disposed"),
                .init(4, "x", "new"), .init(4, "x", "completed"),
            ])
    }

    @Test func throttleSendsOnlyAfterQuietAndFlushesOnCompletion() {
        let timeline = Timeline()
        let s = timeline.scheduler
        let input = Subject<Int>()
        input.signal.throttle(interval: 1, on: s).subscribe(timeline.observer("x"))
        s.at(0) { input.send(1) }
        s.at(0.5) { input.send(2) }
        s.at(3) { input.send(3) }
        s.at(3.2) { input.sendCompleted() }
        s.run()
        #expect(timeline.all == [.init(1.5, "x", "2"), .init(3.2, "x", "3"), .init(3.2, "x", "completed")])
    }
}
