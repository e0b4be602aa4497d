import Dispatch
import ReplayCore
import ReplaySync
import Testing

@Suite("Schedulers")
struct SchedulerTests {
    @Test func testSchedulerRunsByTimeThenInsertionOrderAndSetsTheClock() {
        let scheduler = TestScheduler()
        let log = Locked<[String]>([])
        scheduler.after(2) { log.withLock { $0.append("b@\(scheduler.elapsed)") } }
        scheduler.after(1) { log.withLock { $0.append("a@\(scheduler.elapsed)") } }
        scheduler.after(2) { log.withLock { $0.append("c@\(scheduler.elapsed)") } }
        scheduler.advance(by: 1.5)
        #expect(log.withLock { $0 } == ["a@1.0"])
        #expect(scheduler.elapsed == 1.5)
        scheduler.advance(by: 10)
        #expect(log.withLock { $0 } == ["a@1.0", "b@2.0", "c@2.0"])
        #expect(scheduler.elapsed == 11.5)
    }

    /// Actions run without the scheduler's lock held: they may schedule more work, which
    /// runs in the same advance when due.
    @Test func actionsMayScheduleActionsAndCancelledOnesDoNotRun() {
        let scheduler = TestScheduler()
        let log = Locked<[String]>([])
        scheduler.after(1) {
            log.withLock { $0.append("outer") }
            scheduler.after(1) { log.withLock { $0.append("inner@\(scheduler.elapsed)") } }
        }
        scheduler.after(1.5) { log.withLock { $0.append("cancelled") } }.dispose()
        scheduler.run()
        #expect(log.withLock { $0 } == ["outer", "inner@2.0"])
        #expect(scheduler.pendingCount == 0)
    }

    @Test func queueSchedulerRunsActionsInOrderOnItsQueue() async {
        let scheduler = QueueScheduler(label: "test")
        let log = Locked<[Int]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for n in 0..<100 { scheduler.schedule { log.withLock { $0.append(n) } } }
            scheduler.schedule { done.resume() }
        }
        #expect(log.withLock { $0 } == Array(0..<100))
    }

    @Test func deliverOnAndSubscribeOnMoveWorkToTheScheduler() {
        let scheduler = TestScheduler()
        let log = Locked<[String]>([])
        Signal<Int>.just(1)
            .on(subscribed: { log.withLock { $0.append("subscribed@\(scheduler.elapsed)") } })
            .subscribe(on: scheduler)
            .delay(1, on: scheduler)
            .deliver(on: scheduler)
            .subscribe(next: { v in log.withLock { $0.append("\(v)@\(scheduler.elapsed)") } })
        #expect(log.withLock { $0 } == [])
        scheduler.advance(to: 0.5)
        #expect(log.withLock { $0 } == ["subscribed@0.0"])
        scheduler.run()
        #expect(log.withLock { $0 } == ["subscribed@0.0", "1@1.0"])
    }
}
