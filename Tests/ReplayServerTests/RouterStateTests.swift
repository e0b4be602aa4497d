import NIOCore
import ReplayProtocol
import Testing

@testable import ReplayServer

/// Every transition of the router's state machine, without a channel: what a connection
/// does with each command in each phase, and when it reads.
@Suite("RouterState")
struct RouterStateTests {
    static let pub = InboundCommand.command(.publish(stream: "s", payload: ByteBuffer(string: "x")))
    static let sub = InboundCommand.command(.subscribe(stream: "s", sid: "1", start: .all))
    static let ping = InboundCommand.command(.ping)
    static let complaint = ReplayError(.badCommand, "no such word")
    static let framing = ReplayError(.badFrame, "the payload did not end with CRLF")

    @Test func readingIsHeldUntilTheAdmissionThenResumedOnce() {
        var state = RouterState(maxOwed: 4)
        #expect(state.phase == .admitting(draining: false))
        let r1 = state.readRequested(owed: 0)
        #expect(!r1)
        #expect(state.readHeld)
        let r2 = state.admit()
        #expect(r2)
        #expect(state.phase == .serving)
        let r3 = state.resumeReading(owed: 0)
        #expect(r3)
        #expect(!state.readHeld)
        let r4 = state.resumeReading(owed: 0)
        #expect(!r4, "nothing held: nothing to resume")
        let r5 = state.admit()
        #expect(!r5, "HELLO is written once")
        let r6 = state.readRequested(owed: 0)
        #expect(r6)
    }

    @Test func tooManyRepliesOwedHoldReadingUntilTheyAreWritten() {
        var state = RouterState(maxOwed: 2)
        _ = state.admit()
        let r7 = state.readRequested(owed: 2)
        #expect(r7)
        let r8 = state.readRequested(owed: 3)
        #expect(!r8)
        let r9 = state.resumeReading(owed: 3)
        #expect(!r9)
        let r10 = state.resumeReading(owed: 2)
        #expect(r10)
    }

    @Test func aPublishGoesToTheWriterUnlessAnEarlierCommandIsInTheTask() {
        var state = RouterState(maxOwed: 8)
        _ = state.admit()
        let r11 = state.read(Self.pub)
        #expect(r11 == .publish)
        #expect(state.inTask == 0)
        let r12 = state.read(Self.sub)
        #expect(r12 == .forward)
        #expect(state.inTask == 1)
        let r13 = state.read(Self.pub)
        #expect(r13 == .forward, "follows the SUB through the task, in command order")
        #expect(state.inTask == 2)
        state.performed()
        state.performed()
        let r14 = state.read(Self.pub)
        #expect(r14 == .publish)
    }

    @Test func anAckIsTakenOnTheEventLoopOnceTheConnectionSaysSoAndNothingIsInTheTask() {
        let ack = InboundCommand.command(.ack(sid: "1", sequence: 1))
        let nack = InboundCommand.command(.nack(sid: "1", sequence: 2))
        var state = RouterState(maxOwed: 8)
        _ = state.admit()
        let before = state.read(ack)
        #expect(before == .forward, "until the connection's handler is in place, through the task")
        state.performed()
        state.acknowledgementsOnLoop()
        let (r1, r2) = (state.read(ack), state.read(nack))
        #expect(r1 == .acknowledge && r2 == .acknowledge)
        #expect(state.inTask == 0)
        let r3 = state.read(Self.sub)
        #expect(r3 == .forward)
        let r4 = state.read(ack)
        #expect(r4 == .forward, "follows its SUB through the task, in command order")
        state.performed()
        state.performed()
        let r5 = state.read(ack)
        #expect(r5 == .acknowledge)
    }

    @Test func pingAndAComplaintAreAnsweredOnTheSpot() {
        var state = RouterState(maxOwed: 8)
        _ = state.admit()
        let r15 = state.read(Self.ping)
        #expect(r15 == .reply(.pong))
        let r16 = state.read(.invalid(Self.complaint))
        #expect(r16 == .reply(.error(Self.complaint)))
        #expect(state.inTask == 0)
        #expect(state.phase == .serving)
    }

    @Test func aFramingErrorGoesToTheTaskAndNothingAfterItIsAnswered() {
        var state = RouterState(maxOwed: 8)
        _ = state.admit()
        let r17 = state.read(.invalid(Self.framing))
        #expect(r17 == .forward)
        #expect(state.phase == .closing)
        let r18 = state.read(Self.ping)
        #expect(r18 == .discard)
        let r19 = state.read(Self.pub)
        #expect(r19 == .discard)
        let r20 = state.readRequested(owed: 0)
        #expect(r20, "reads go on (and are dropped) until the task closes")
        state.inputEnded()
        #expect(state.phase == .closing)
    }

    @Test func drainingAnswersPingAndRefusesTheRestWithoutReading() {
        var state = RouterState(maxOwed: 8)
        _ = state.admit()
        state.inputEnded()
        #expect(state.phase == .draining)
        #expect(state.isDraining)
        let r21 = state.read(Self.ping)
        #expect(r21 == .reply(.pong))
        let r22 = state.read(Self.pub)
        #expect(r22 == .reply(.error(RouterState.shuttingDown)))
        let r23 = state.read(.invalid(Self.framing))
        #expect(r23 == .reply(.error(RouterState.shuttingDown)))
        let r24 = state.readRequested(owed: 0)
        #expect(!r24)
        let r25 = state.resumeReading(owed: 0)
        #expect(!r25)
        state.inputEnded()
        #expect(state.phase == .draining)
    }

    @Test func anEndBeforeTheAdmissionStillSaysHelloButReadsNothing() {
        var state = RouterState(maxOwed: 8)
        let r26 = state.readRequested(owed: 0)
        #expect(!r26)
        state.inputEnded()
        #expect(state.phase == .admitting(draining: true))
        #expect(state.isDraining)
        let r27 = state.read(Self.pub)
        #expect(r27 == .reply(.error(RouterState.shuttingDown)))
        let r28 = state.admit()
        #expect(r28)
        #expect(state.phase == .draining)
        let r29 = state.resumeReading(owed: 0)
        #expect(!r29)
    }
}
