import NIOCore
import ReplayProtocol
import Testing

@testable import ReplayServer

/// The connection's bookkeeping, without any I/O.
@Suite("ConnectionState")
struct ConnectionStateTests {
    @Test func commandsBecomeActions() {
        var state = ConnectionState(maxSubscriptions: 2)
        #expect(state.receive(.command(.ping)) == .reply(.pong))
        #expect(
            state.receive(.command(.publish(stream: "s", payload: ByteBuffer(string: "x"))))
                == .perform(.publish(stream: "s", payload: ByteBuffer(string: "x"))))
        #expect(state.receive(.command(.list)) == .perform(.list))
        let bad = ReplayError(.badCommand, "usage")
        #expect(state.receive(.invalid(bad)) == .reply(.error(bad)))
        let fatal = ReplayError(.lineTooLong, "too long")
        #expect(state.receive(.invalid(fatal)) == .close(fatal))
    }

    @Test func subscriptionIdsAreUniqueAndLimited() {
        var state = ConnectionState(maxSubscriptions: 2)
        #expect(state.receive(.command(.subscribe(stream: "s", sid: "a", start: .all))) == .perform(.subscribe(stream: "s", sid: "a", start: .all)))
        guard case .reply(.error(let duplicate)) = state.receive(.command(.subscribe(stream: "t", sid: "a", start: .all))) else {
            Issue.record("a duplicate sid must be refused"); return
        }
        #expect(duplicate.code == .duplicateSubscription)
        _ = state.receive(.command(.subscribe(stream: "s", sid: "b", start: .new)))
        guard case .reply(.error(let limit)) = state.receive(.command(.subscribe(stream: "s", sid: "c", start: .all))) else {
            Issue.record("the third subscription must be refused"); return
        }
        #expect(limit.code == .tooManySubscriptions)
        #expect(state.receive(.command(.unsubscribe(sid: "a"))) == .perform(.unsubscribe(sid: "a")))
        guard case .reply(.error(let unknown)) = state.receive(.command(.unsubscribe(sid: "a"))) else {
            Issue.record("unsubscribing twice must be refused"); return
        }
        #expect(unknown.code == .unknownSubscription)
        state.subscriptionEnded("b")
        #expect(state.subscriptions.isEmpty)
    }
}

/// The connection's one registry of subscriptions: ids, tokens and tasks in one place.
@Suite("ConnectionState registry")
struct ConnectionRegistryTests {
    static func running(_ task: Task<Void, Never>) -> (UInt64) -> ConnectionState.Running {
        { _ in ConnectionState.Running(task: task, phase: SubscriptionPhase(stream: "s"), consumer: "c") }
    }

    @Test func aWindowedSubscriptionTakesItsIdAsASubAndMoreNeedsOne() {
        var state = ConnectionState(maxSubscriptions: 1)
        let windowed = ClientCommand.windowed(.subscribe(stream: "s", sid: "w", start: .all), window: 8)
        guard case .reply(.error(let unknown)) = state.receive(.command(.more(sid: "w", count: 4))) else {
            Issue.record("MORE before its SUB must be refused"); return
        }
        #expect(unknown.code == .unknownSubscription)
        #expect(state.receive(.command(windowed)) == .perform(windowed))
        #expect(state.receive(.command(.more(sid: "w", count: 4))) == .perform(.more(sid: "w", count: 4)))
        guard case .reply(.error(let duplicate)) = state.receive(.command(windowed)) else {
            Issue.record("a windowed SUB reusing an id must be refused"); return
        }
        #expect(duplicate.code == .duplicateSubscription)
        guard case .reply(.error(let limit)) = state.receive(.command(.windowed(.subscribe(stream: "s", sid: "v", start: .all), window: 8))) else {
            Issue.record("a windowed SUB counts against the limit"); return
        }
        #expect(limit.code == .tooManySubscriptions)
    }

    @Test func unsubscribeFreesTheIdAndHandsBackTheTaskToCancel() {
        var state = ConnectionState(maxSubscriptions: 4)
        _ = state.receive(.command(.subscribe(stream: "s", sid: "a", start: .all)))
        let task = Task<Void, Never> {}
        #expect(state.started("a", Self.running(task)) != nil)
        #expect(state.running("a")?.consumer == "c")
        let (action, ended) = state.take(.command(.unsubscribe(sid: "a")))
        #expect(action == .perform(.unsubscribe(sid: "a")))
        #expect(ended == task)
        #expect(state.running("a") == nil && state.subscriptions.isEmpty)
        #expect(state.started("a", Self.running(task)) == nil, "an id no longer reserved is not started")
    }

    @Test func aFinishedSubscriptionFreesOnlyItsOwnId() {
        var state = ConnectionState(maxSubscriptions: 4)
        _ = state.receive(.command(.subscribe(stream: "s", sid: "a", start: .all)))
        let old = state.started("a", Self.running(Task {}))
        _ = state.receive(.command(.unsubscribe(sid: "a")))
        _ = state.receive(.command(.subscribe(stream: "s", sid: "a", start: .new)))
        let new = state.started("a", Self.running(Task {}))
        #expect(old != nil && new != nil && old != new)
        state.subscriptionEnded("a", token: old)
        #expect(state.subscriptions == ["a"], "the older task ending leaves the id its successor uses")
        state.subscriptionEnded("a", token: new)
        #expect(state.subscriptions.isEmpty)
    }

    @Test func closingHandsBackEveryRunningTask() {
        var state = ConnectionState(maxSubscriptions: 4)
        for sid in ["a", "b", "c"] { _ = state.receive(.command(.subscribe(stream: "s", sid: sid, start: .all))) }
        _ = state.started("a", Self.running(Task {}))
        _ = state.started("b", Self.running(Task {}))
        #expect(state.removeAll().count == 2, "c was reserved but had not started")
        #expect(state.subscriptions.isEmpty)
    }
}

/// A windowed subscription's credit, on its own.
@Suite("SubscriptionCredit")
struct SubscriptionCreditTests {
    @Test func creditIsTakenUpToWhatIsLeftAndWaitsAtZeroUntilGranted() async {
        let credit = SubscriptionCredit(window: 3)
        #expect(await credit.take(upTo: 2) == 2)
        #expect(await credit.take(upTo: 5) == 1)
        credit.give(1)  // a page shorter than its credit gives the rest back
        #expect(await credit.take(upTo: 5) == 1)
        let waiting = Task { await credit.take(upTo: 10) }
        credit.give(4)  // MORE
        #expect(await waiting.value == 4)
        // A cancelled wait ends with nothing taken.
        let cancelled = Task { await credit.take(upTo: 10) }
        cancelled.cancel()
        #expect(await cancelled.value == 0)
        #expect(credit.available == 0)
    }
}
