import Testing

@testable import ReplayStore

/// Every transition of a consumer group, on explicit times: no store, no clock.
@Suite("ConsumerGroup")
struct ConsumerGroupTests {
    func group(ackWait: Int64 = 1_000, maxDeliver: Int? = nil) -> ConsumerGroup {
        ConsumerGroup(
            name: "g", settings: GroupSettings(ackWaitMillis: ackWait, maxDeliver: maxDeliver, deadLetter: maxDeliver.map { _ in "dead" }),
            deliveredSequence: 0, createdAt: 0)
    }

    func refusal<T>(_ result: Result<T, ConsumerGroup.Refusal>) -> ConsumerGroup.Refusal? {
        if case .failure(let refusal) = result { return refusal }
        return nil
    }

    func given(_ handout: ConsumerGroup.Handout) -> [UInt64] { handout.given.map(\.sequence) }

    @Test func eachEventGoesToOneMemberAndNewWorkFollowsTheCursor() {
        var g = group()
        #expect(given(g.handOut(to: "a", limit: 2, now: 0, firstSequence: 1, lastSequence: 5)) == [1, 2])
        #expect(given(g.handOut(to: "b", limit: 10, now: 0, firstSequence: 1, lastSequence: 5)) == [3, 4, 5])
        #expect(g.handOut(to: "c", limit: 10, now: 0, firstSequence: 1, lastSequence: 5).given.isEmpty)
        #expect(g.deliveredSequence == 5)
        #expect(g.held(by: "a") == 2 && g.held(by: "b") == 3)
        #expect(g.delivered == 5 && g.redelivered == 0)
    }

    @Test func aMemberHoldsAtMostItsLimitAndWhatRanOutDoesNotCount() {
        var g = group(ackWait: 100)
        #expect(given(g.handOut(to: "a", limit: 2, now: 0, firstSequence: 1, lastSequence: 9)) == [1, 2])
        #expect(g.handOut(to: "a", limit: 2, now: 50, firstSequence: 1, lastSequence: 9).given.isEmpty)
        #expect(refusal(g.acknowledge(1, by: "a")) == nil)
        #expect(given(g.handOut(to: "a", limit: 2, now: 60, firstSequence: 1, lastSequence: 9)) == [3])
        // Both held events ran out: a, the only member, gets them again (oldest first).
        let again = g.handOut(to: "a", limit: 2, now: 160, firstSequence: 1, lastSequence: 9)
        #expect(again.given.map(\.sequence) == [2, 3])
        #expect(again.given.map(\.deliveries) == [2, 2])
    }

    @Test func anAckRemovesOnlyThatEventAndOnlyForItsHolder() {
        var g = group()
        _ = g.handOut(to: "a", limit: 3, now: 0, firstSequence: 1, lastSequence: 3)
        #expect(refusal(g.acknowledge(2, by: "b")) == .heldByAnother("a"))
        #expect(refusal(g.acknowledge(2, by: "a")) == nil)
        #expect(refusal(g.acknowledge(2, by: "a")) == .notPending)
        #expect(refusal(g.acknowledge(9, by: "a")) == .notPending)
        #expect(g.pending.keys.sorted() == [1, 3])
    }

    @Test func anEventWhoseTimeRanOutGoesToAnyMemberWithItsCountRaised() {
        var g = group(ackWait: 1_000)
        _ = g.handOut(to: "a", limit: 1, now: 0, firstSequence: 1, lastSequence: 2)
        // Still in time: b gets the next new event, not a's.
        #expect(given(g.handOut(to: "b", limit: 1, now: 999, firstSequence: 1, lastSequence: 2)) == [2])
        let late = g.handOut(to: "b", limit: 5, now: 1_000, firstSequence: 1, lastSequence: 2)
        #expect(late.given.map(\.sequence) == [1] && late.given.map(\.deliveries) == [2])
        #expect(g.pending[1]?.member == "b" && g.pending[1]?.lastMember == "b")
        // a's late ACK no longer counts: b holds it.
        #expect(refusal(g.acknowledge(1, by: "a")) == .heldByAnother("b"))
        #expect(g.redelivered == 1)
        #expect(g.nextDue == 1_999)
    }

    @Test func aNackFreesTheEventAfterItsDelay() {
        var g = group()
        _ = g.handOut(to: "a", limit: 1, now: 0, firstSequence: 1, lastSequence: 1)
        #expect(g.giveBack(1, by: "b", delayMillis: 0, now: 10) == .failure(.heldByAnother("a")))
        #expect(g.giveBack(1, by: "a", delayMillis: 500, now: 10) == .success(.freed))
        #expect(g.handOut(to: "b", limit: 1, now: 509, firstSequence: 1, lastSequence: 1).given.isEmpty)
        #expect(given(g.handOut(to: "b", limit: 1, now: 510, firstSequence: 1, lastSequence: 1)) == [1])
    }

    @Test func aMemberThatLeavesFreesWhatItHeldAtOnce() {
        var g = group()
        _ = g.handOut(to: "a", limit: 2, now: 0, firstSequence: 1, lastSequence: 3)
        _ = g.handOut(to: "b", limit: 1, now: 0, firstSequence: 1, lastSequence: 3)
        #expect(g.release("a", now: 5) == 2)
        let handout = g.handOut(to: "b", limit: 5, now: 5, firstSequence: 1, lastSequence: 3)
        #expect(given(handout) == [1, 2])
        #expect(handout.given.map(\.deliveries) == [2, 2])
        #expect(g.held(by: "b") == 3)
    }

    @Test func afterMaxDeliverAFailingEventIsADeadLetter() {
        var g = group(ackWait: 100, maxDeliver: 2)
        _ = g.handOut(to: "a", limit: 1, now: 0, firstSequence: 1, lastSequence: 1)
        #expect(g.giveBack(1, by: "a", delayMillis: 0, now: 1) == .success(.freed))
        #expect(g.handOut(to: "a", limit: 1, now: 1, firstSequence: 1, lastSequence: 1).given.map(\.deliveries) == [2])
        // The second delivery fails too: a NACK now gives it up.
        guard case .success(.deadLetter(let delivery)) = g.giveBack(1, by: "a", delayMillis: 0, now: 2) else {
            Issue.record("expected a dead letter")
            return
        }
        #expect(delivery.deliveries == 2 && delivery.lastMember == "a")
        #expect(g.pending.isEmpty && g.deadLettered == 1)
    }

    @Test func anEventWhoseTimeRanOutAfterMaxDeliverIsADeadLetterWhenWorkIsNextAskedFor() {
        var g = group(ackWait: 100, maxDeliver: 1)
        _ = g.handOut(to: "a", limit: 1, now: 0, firstSequence: 1, lastSequence: 2)
        let handout = g.handOut(to: "b", limit: 5, now: 100, firstSequence: 1, lastSequence: 2)
        #expect(handout.deadLetters.map(\.sequence) == [1])
        #expect(given(handout) == [2])
        #expect(g.pending.keys.sorted() == [2])
    }

    @Test func retentionRemovesWhatItTrimmedAndMovesTheCursor() {
        var g = group()
        _ = g.handOut(to: "a", limit: 3, now: 0, firstSequence: 1, lastSequence: 3)
        #expect(g.floor == 1)
        let trimmed = [g.trim(before: 3), g.trim(before: 3)]
        #expect(trimmed == [true, false])
        #expect(g.pending.keys.sorted() == [3])
        #expect(g.floor == 3)
        let again = g.trim(before: 10)
        #expect(again)
        #expect(g.pending.isEmpty && g.floor == 4)
        // New work starts at the first retained event; what was skipped is said once.
        let next = g.handOut(to: "a", limit: 2, now: 0, firstSequence: 10, lastSequence: 12)
        #expect(next.skipped == 4...9 && given(next) == [10, 11])
        #expect(g.handOut(to: "b", limit: 2, now: 0, firstSequence: 10, lastSequence: 12).skipped == nil)
        var fresh = group()
        let first = fresh.handOut(to: "a", limit: 2, now: 0, firstSequence: 7, lastSequence: 9)
        #expect(given(first) == [7, 8] && first.skipped == 1...6)
    }
}
