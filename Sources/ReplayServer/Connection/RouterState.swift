import ReplayProtocol

/// The decisions of a connection's `CommandRouter` as one state machine, without I/O: the
/// router tells it what happened (a command read, a read asked for, the admission, the end
/// of the input) and does what it returns. As NIO's async-sequence producer and
/// postgres-nio's connection state machine, every decision is made in one place, on the
/// event loop, and every transition is tested alone (`RouterStateTests`).
struct RouterState {
    enum Phase: Equatable {
        /// Accepted, HELLO not yet written: reading is held. `draining` if the input
        /// ended (or the server began shutting down) before the admission.
        case admitting(draining: Bool)
        /// Commands are read and routed.
        case serving
        /// The input ended, or the server is shutting down: what was read is answered, a
        /// command still read is refused with `shutting_down` (PING is answered), nothing
        /// more is asked for.
        case draining
        /// A framing error was read: the task answers it and closes the connection;
        /// nothing read after it is answered.
        case closing
    }

    /// What to do with a command just read.
    enum ReadAction: Equatable {
        /// Drop it: the connection is closing.
        case discard
        /// Take a reply slot and fill it at once with this frame.
        case reply(ServerFrame)
        /// Take a reply slot and hand the PUB (or ATOMIC) to the writer, no task hop.
        case publish
        /// Take a reply slot and hand the ACK (or NACK) to the connection's handler on the
        /// event loop, which submits it to the writer: no task hop.
        case acknowledge
        /// Take a reply slot and send the command on to the connection's task.
        case forward
    }

    private(set) var phase = Phase.admitting(draining: false)
    /// Commands forwarded to the task whose effect it has not yet submitted. While any is,
    /// a PUB follows them through the task, so effects keep command order (`COMPLETE s`
    /// then `PUB s` still refuses the PUB).
    private(set) var inTask = 0
    /// A read was asked for and not passed on.
    private(set) var readHeld = false
    /// The connection handles ACK and NACK on the event loop (it said so once its task
    /// began): until then they go through the task.
    private(set) var acknowledgesOnLoop = false
    /// More replies owed than this holds reading (a client sending faster than commits).
    let maxOwed: Int

    init(maxOwed: Int) {
        self.maxOwed = maxOwed
    }

    static let shuttingDown = ReplayError(.shuttingDown, "replayd is shutting down; reconnect to the next instance")

    mutating func read(_ inbound: InboundCommand) -> ReadAction {
        switch phase {
        case .closing:
            return .discard
        case .draining, .admitting(draining: true):
            return .reply(inbound == .command(.ping) ? .pong : .error(Self.shuttingDown))
        case .serving, .admitting(draining: false):
            break
        }
        switch inbound {
        case .command(.publish), .command(.publishChecked), .command(.atomic):
            if inTask == 0 { return .publish }
        case .command(.ack), .command(.nack):
            // As a PUB: straight on only while no earlier command (its SUB) is in the task.
            if inTask == 0, acknowledgesOnLoop { return .acknowledge }
        case .command(.ping):
            return .reply(.pong)  // no effect to order: answered on the event loop
        case .invalid(let error) where !error.isFatal:
            return .reply(.error(error))
        case .invalid:
            phase = .closing  // the task answers it, then closes
        case .command:
            break
        }
        inTask += 1
        return .forward
    }

    /// The connection's handler for ACK and NACK on the event loop is in place.
    mutating func acknowledgementsOnLoop() {
        acknowledgesOnLoop = true
    }

    /// The task submitted the effect of one forwarded command.
    mutating func performed() {
        inTask -= 1
    }

    /// The channel asks to read: whether to pass it on now (else it is held until
    /// `resumeReading` says so).
    mutating func readRequested(owed: Int) -> Bool {
        if mayRead(owed: owed) { return true }
        readHeld = true
        return false
    }

    /// After the admission or replies written: whether to pass a held read on now.
    mutating func resumeReading(owed: Int) -> Bool {
        guard readHeld, mayRead(owed: owed) else { return false }
        readHeld = false
        return true
    }

    /// HELLO may be written; `false` if it already was.
    mutating func admit() -> Bool {
        guard case .admitting(let draining) = phase else { return false }
        phase = draining ? .draining : .serving
        return true
    }

    /// The input ended, or the server is shutting down.
    mutating func inputEnded() {
        switch phase {
        case .admitting: phase = .admitting(draining: true)
        case .serving: phase = .draining
        case .draining, .closing: break
        }
    }

    private func mayRead(owed: Int) -> Bool {
        switch phase {
        // A closing connection goes on reading (and dropping) until the task closes it,
        // so a peer's writes do not block on a full socket meanwhile.
        case .serving, .closing: owed <= maxOwed
        case .admitting, .draining: false
        }
    }

    /// Whether a command read now would be run (not refused for a shutdown, nor dropped):
    /// only such commands count against the connection's rate.
    var isServing: Bool {
        if case .serving = phase { true } else { false }
    }

    var isDraining: Bool {
        switch phase {
        case .draining, .admitting(draining: true): true
        default: false
        }
    }
}
