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
