import ReplayCore
import ReplayTesting
import Testing

@Suite("Subject")
struct SubjectTests {
    @Test func lateSubscriberGetsTheTerminalEventButNoValues() {
        let timeline = Timeline()
        let subject = Subject<String>()
        subject.send("early")
        subject.sendFailed(TestFailure("broken"))
        subject.signal.subscribe(timeline.observer("late"))
        #expect(timeline.all.map(\.what) == ["failed: broken"])
    }

    @Test func nothingIsDeliveredAfterTheTerminalEventOrAfterDisposal() {
        let timeline = Timeline()
        let subject = Subject<Int>()
        let kept = subject.signal.subscribe(timeline.observer("kept"))
        let gone = subject.signal.subscribe(timeline.observer("gone"))
        subject.send(1)
        gone.dispose()
        subject.send(2)
        subject.sendCompleted()
        subject.send(3)
        kept.dispose()
        #expect(timeline.of("kept").map(\.what) == ["1", "2", "completed"])
        #expect(timeline.of("gone").map(\.what) == ["1"])
    }
}
