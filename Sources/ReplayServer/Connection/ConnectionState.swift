import NIOCore
import ReplayModel
import ReplayProtocol

/// The bookkeeping of one connection as a state machine: it takes decoded commands and
/// returns what to do, checking what can be checked without I/O (subscription ids,
/// limits). The connection runner performs the actions; tests drive this directly.
struct ConnectionState {
    enum Action: Equatable {
        /// Answer at once.
        case reply(ServerFrame)
        /// Carry the command out (a subscription's id is checked and reserved, or freed);
        /// its answer comes when it is done.
        case perform(ClientCommand)
        /// Send this error, then close: the byte stream cannot be trusted any more.
        case close(ReplayError)
    }

    let maxSubscriptions: Int
    private(set) var subscriptions: Set<String> = []

    init(maxSubscriptions: Int) {
        self.maxSubscriptions = maxSubscriptions
    }

    mutating func receive(_ inbound: InboundCommand) -> Action {
        switch inbound {
        case .invalid(let error):
            return error.isFatal ? .close(error) : .reply(.error(error))
        case .command(let command):
            return receive(command)
        }
    }

    private mutating func receive(_ command: ClientCommand) -> Action {
        switch command {
        case .ping:
            return .reply(.pong)
        case .ack(let sid, _):
            guard subscriptions.contains(sid) else {
                return .reply(.error(ReplayError(.unknownSubscription, "no subscription '\(sid)' on this connection")))
            }
        case .subscribe(_, let sid, _), .subscribeDurable(_, let sid, _, _):
            guard !subscriptions.contains(sid) else {
                return .reply(.error(ReplayError(.duplicateSubscription, "subscription id '\(sid)' is already in use on this connection")))
            }
            guard subscriptions.count < maxSubscriptions else {
                return .reply(
                    .error(
                        ReplayError(
                            .tooManySubscriptions,
                            "this connection has \(maxSubscriptions) subscriptions, the limit; unsubscribe some or open another connection")))
            }
            subscriptions.insert(sid)
        case .unsubscribe(let sid):
            guard subscriptions.remove(sid) != nil else {
                return .reply(.error(ReplayError(.unknownSubscription, "no subscription '\(sid)' on this connection")))
            }
        default:
            break
        }
        return .perform(command)
    }

    /// A subscription ended on its own (its stream terminated or was deleted), or could
    /// not start: its id is free again.
    mutating func subscriptionEnded(_ sid: String) {
        subscriptions.remove(sid)
    }
}
