import NIOCore
import ReplayProtocol

@testable import ReplayServer

/// Drives a `ConnectionState` with commands and reports, as booleans, what it decided.
struct ConnectionStateProbe {
    private var state: ConnectionState

    init(maxSubscriptions: Int) {
        state = ConnectionState(maxSubscriptions: maxSubscriptions)
    }

    var subscriptions: Set<String> { state.subscriptions }

    mutating func subscribe(_ sid: String) -> Bool {
        if case .perform(.subscribe) = state.receive(.command(.subscribe(stream: "s", sid: sid, start: .all))) { return true }
        return false
    }

    mutating func unsubscribe(_ sid: String) -> Bool {
        if case .perform(.unsubscribe) = state.receive(.command(.unsubscribe(sid: sid))) { return true }
        return false
    }

    mutating func ended(_ sid: String) { state.subscriptionEnded(sid) }

    mutating func ping() -> Bool { state.receive(.command(.ping)) == .reply(.pong) }
}
