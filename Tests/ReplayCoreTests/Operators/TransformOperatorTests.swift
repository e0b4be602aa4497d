import ReplayCore
import ReplayTesting
import Testing

@Suite("Transforming operators")
struct TransformOperatorTests {
    func run<V: Sendable>(_ signal: Signal<V>) -> [String] {
        let timeline = Timeline()
        signal.subscribe(timeline.observer("x"))
        return timeline.all.map(\.what)
    }

    @Test func mapFilterScan() {
        #expect(run(Signal.sequence([1, 2, 3]).map { $0 * 10 }) == ["10", "20", "30", "completed"])
        #expect(run(Signal.sequence([1, 2, 3, 4]).filter { $0 % 2 == 0 }) == ["2", "4", "completed"])
        #expect(run(Signal.sequence([1, 2, 3]).scan(start: 0, reduce: +)) == ["1", "3", "6", "completed"])
    }

    @Test func distinctIgnoreStartWith() {
        #expect(run(Signal.sequence([1, 1, 2, 2, 1]).distinctUntilChanged()) == ["1", "2", "1", "completed"])
        #expect(run(Signal.sequence([1, 2]).ignoreValues()) == ["completed"])
        #expect(run(Signal.sequence([2, 3]).start(with: 1)) == ["1", "2", "3", "completed"])
    }

    @Test func constructors() {
        #expect(run(Signal.just("x")) == ["x", "completed"])
        #expect(run(Signal.return("r")) == ["r", "completed"])
        #expect(run(Signal.sequence([1, 2]).bind { (n: Int) in Signal.sequence([n, n * 10]) }) == ["1", "10", "2", "20", "completed"])
        #expect(run(Signal<Int>.empty) == ["completed"])
        #expect(run(Signal<Int>.never) == [])
        #expect(run(Signal<Int>.failure(TestFailure("e"))) == ["failed: e"])
        var made = 0
        let deferred = Signal<Int>.deferred { .just(42) }
        made += 1
        #expect(run(deferred) == ["42", "completed"] && made == 1)
    }

    @Test func catchAndTake() {
        let recovered = Signal<Int>.failure(TestFailure("e")).catch { _ in .just(0) }
        #expect(run(recovered) == ["0", "completed"])
        #expect(run(Signal.sequence([1, 2, 3]).take(first: 2)) == ["1", "2", "completed"])

        let timeline = Timeline()
        let s = timeline.scheduler
        let ticks = Subject<Int>()
        let stop = Subject<Void>()
        ticks.signal.take(until: stop.signal).subscribe(timeline.observer("x"))
        s.at(1) { ticks.send(1) }
        s.at(2) { stop.send(()) }
        s.at(3) { ticks.send(2) }
        s.run()
        #expect(timeline.all == [.init(1, "x", "1"), .init(2, "x", "completed")])
    }
}
