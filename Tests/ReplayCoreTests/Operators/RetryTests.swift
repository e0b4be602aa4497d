import ReplayCore
import ReplaySync
import ReplayTesting
import Testing

@Suite("retry")
struct RetryTests {
    @Test func resubscribesAfterBackoffUpToTheLimitThenFails() {
        let timeline = Timeline()
        let s = timeline.scheduler
        let runs = Locked(0)
        let flaky = Signal<String> { observer in
            let run = runs.withLock {
                $0 += 1; return $0
            }
            timeline.log("source", "run \(run)")
            observer.sendFailed(TestFailure("attempt \(run) failed"))
            return Disposables.empty
        }
        flaky.retry(upTo: 2, delay: { attempt in Double(attempt) }, on: s).subscribe(timeline.observer("x"))
        s.run()
        #expect(
            timeline.all == [
                .init(0, "source", "run 1"),
                .init(1, "source", "run 2"),
                .init(3, "source", "run 3"),
                .init(3, "x", "failed: attempt 3 failed"),
            ])
    }

    @Test func aSuccessfulRunPassesThrough() {
        let timeline = Timeline()
        let runs = Locked(0)
        let secondTime = Signal<String> { observer in
            let run = runs.withLock {
                $0 += 1; return $0
            }
            if run == 1 { observer.sendFailed(TestFailure("no")) } else { observer.send("ok"); observer.sendCompleted() }
            return Disposables.empty
        }
        secondTime.retry(upTo: 5, delay: { _ in 0.5 }, on: timeline.scheduler).subscribe(timeline.observer("x"))
        timeline.scheduler.run()
        #expect(timeline.all == [.init(0.5, "x", "ok"), .init(0.5, "x", "completed")])
    }
}
