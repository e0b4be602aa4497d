import NIOCore
import ReplayAuth
import ReplayModel
import ReplayProtocol

/// The bookkeeping of one connection as a state machine: it takes decoded commands and
/// returns what to do, checking what can be checked without I/O (subscription ids,
/// limits). The connection runner performs the actions; tests drive this directly.
///
/// It is also the connection's one registry of subscriptions: an id is reserved when its
/// SUB is accepted, carries its running task once started, and is freed by UNSUB or when
/// the subscription ends, all under the connection's one lock.
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

    /// A started subscription: its task, where it stands, and what an ACK means for it.
    struct Running {
        let task: Task<Void, Never>
        let phase: SubscriptionPhase
        /// A durable subscription's consumer, whose position ACK moves.
        var consumer: String? = nil
        /// A group member's group and member id: ACK and NACK are of one event it holds.
        /// On a pattern, they name the event's stream, which the pattern must match.
        var group: (name: String, member: String, deadLetter: String?, pattern: StreamPattern?)? = nil
        /// A windowed subscription's credit, which MORE raises.
        var credit: SubscriptionCredit? = nil
    }

    /// One subscription id in use. The token tells apart two subscriptions that used the
    /// same id one after the other, so that a finishing task frees only its own.
    struct Entry {
        let token: UInt64
        var running: Running?
    }

    let maxSubscriptions: Int
    /// Who the peer is to the access rules (`SocketRules`), once known; everyone without
    /// rules. The router checks every command against it; LIST and DERIVATIONS show what it
    /// may read.
    var principal = Principal.unrestricted
    private(set) var entries: [String: Entry] = [:]
    private var nextToken: UInt64 = 0

    var subscriptions: Set<String> { Set(entries.keys) }

    init(maxSubscriptions: Int) {
        self.maxSubscriptions = maxSubscriptions
    }

    mutating func receive(_ inbound: InboundCommand) -> Action {
        take(inbound).action
    }

    /// `receive`, and the task of a subscription the command ended (UNSUB), to cancel.
    mutating func take(_ inbound: InboundCommand) -> (action: Action, cancel: Task<Void, Never>?) {
        var ended: Task<Void, Never>?
        if case .command(.unsubscribe(let sid)) = inbound { ended = entries[sid]?.running?.task }
        return (decide(inbound), ended)
    }

    private mutating func decide(_ inbound: InboundCommand) -> Action {
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
        case .windowed(let subscription, _), .filtered(let subscription, _), .hashed(let subscription):
            // The SUB's own checks; performed whole.
            if case .reply(let refusal) = receive(subscription) { return .reply(refusal) }
            return .perform(command)
        case .more(let sid, _):
            guard entries[sid] != nil else {
                return .reply(.error(ReplayError(.unknownSubscription, "no subscription '\(sid)' on this connection")))
            }
        case .ack(let sid, _, _), .nack(let sid, _, _, _):
            guard entries[sid] != nil else {
                return .reply(.error(ReplayError(.unknownSubscription, "no subscription '\(sid)' on this connection")))
            }
        case .subscribe(_, let sid, _), .subscribePattern(_, let sid, _), .subscribeDurable(_, let sid, _, _),
            .subscribeGroup(_, let sid, _, _), .subscribePatternGroup(_, let sid, _, _):
            guard entries[sid] == nil else {
                return .reply(.error(ReplayError(.duplicateSubscription, "subscription id '\(sid)' is already in use on this connection")))
            }
            guard entries.count < maxSubscriptions else {
                return .reply(
                    .error(
                        ReplayError(
                            .tooManySubscriptions,
                            "this connection has \(maxSubscriptions) subscriptions, the limit; unsubscribe some or open another connection")))
            }
            entries[sid] = Entry(token: nextToken)
            nextToken += 1
        case .unsubscribe(let sid):
            guard entries.removeValue(forKey: sid) != nil else {
                return .reply(.error(ReplayError(.unknownSubscription, "no subscription '\(sid)' on this connection")))
            }
        default:
            break
        }
        return .perform(command)
    }

    /// Records the task of the subscription its SUB reserved `sid` for; returns the
    /// token its task gives `subscriptionEnded`, or `nil` if the id is no longer reserved.
    mutating func started(_ sid: String, _ running: (_ token: UInt64) -> Running) -> UInt64? {
        guard let token = entries[sid]?.token else { return nil }
        entries[sid]?.running = running(token)
        return token
    }

    /// A subscription ended on its own (its stream terminated or was deleted), or could
    /// not start: its id is free again, unless `token` says it was already reused.
    mutating func subscriptionEnded(_ sid: String, token: UInt64? = nil) {
        guard let entry = entries[sid], token == nil || entry.token == token else { return }
        entries[sid] = nil
    }

    /// The running subscription `sid`, for ACK.
    func running(_ sid: String) -> Running? { entries[sid]?.running }

    /// Frees every id, for a connection that closes; returns the tasks to cancel.
    mutating func removeAll() -> [Task<Void, Never>] {
        defer { entries = [:] }
        return entries.values.compactMap(\.running?.task)
    }
}
