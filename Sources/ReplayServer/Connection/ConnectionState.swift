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
        /// Append to a stream; answer when committed.
        case publish(stream: String, payload: ByteBuffer)
        /// Append if the checks hold (expected sequence, idempotent producer).
        case publishChecked(stream: String, payload: ByteBuffer, checks: AppendConditions)
        /// Append every event or none.
        case atomic([AtomicEvent])
        /// Start a subscription; the sid is already reserved.
        case subscribe(stream: String, sid: String, start: StartPosition)
        /// Start a durable consumer's subscription; the sid is already reserved.
        case subscribeDurable(stream: String, sid: String, start: StartPosition, consumer: String)
        /// Acknowledge for the durable subscription `sid`.
        case ack(sid: String, sequence: UInt64)
        /// Stop a subscription and answer.
        case unsubscribe(sid: String)
        /// A stream administration command, answered when done.
        case admin(ClientCommand)
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
        case .publish(let stream, let payload):
            return .publish(stream: stream, payload: payload)
        case .publishChecked(let stream, let payload, let checks):
            return .publishChecked(stream: stream, payload: payload, checks: checks)
        case .atomic(let events):
            return .atomic(events)
        case .ack(let sid, let sequence):
            guard subscriptions.contains(sid) else {
                return .reply(.error(ReplayError(.unknownSubscription, "no subscription '\(sid)' on this connection")))
            }
            return .ack(sid: sid, sequence: sequence)
        case .subscribe(let stream, let sid, _), .subscribeDurable(let stream, let sid, _, _):
            guard !subscriptions.contains(sid) else {
                return .reply(.error(ReplayError(.duplicateSubscription, "subscription id '\(sid)' is already in use on this connection")))
            }
            guard subscriptions.count < maxSubscriptions else {
                return .reply(.error(ReplayError(
                    .tooManySubscriptions, "this connection has \(maxSubscriptions) subscriptions, the limit; unsubscribe some or open another connection")))
            }
            subscriptions.insert(sid)
            if case .subscribeDurable(_, _, let start, let consumer) = command {
                return .subscribeDurable(stream: stream, sid: sid, start: start, consumer: consumer)
            }
            guard case .subscribe(_, _, let start) = command else { preconditionFailure("a subscription") }
            return .subscribe(stream: stream, sid: sid, start: start)
        case .unsubscribe(let sid):
            guard subscriptions.remove(sid) != nil else {
                return .reply(.error(ReplayError(.unknownSubscription, "no subscription '\(sid)' on this connection")))
            }
            return .unsubscribe(sid: sid)
        case .create, .delete, .info, .list, .complete, .fail, .reset, .consumers, .deleteConsumer:
            return .admin(command)
        }
    }

    /// A subscription ended on its own (its stream terminated or was deleted), or could
    /// not start: its id is free again.
    mutating func subscriptionEnded(_ sid: String) {
        subscriptions.remove(sid)
    }
}
