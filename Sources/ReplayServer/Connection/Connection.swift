import Foundation
import Logging
import NIOCore
import ReplayAuth
import ReplayCore
import ReplayDerive
import ReplayModel
import ReplayProtocol
import ReplayStore
import ReplaySync

/// What every connection shares: the store, the streams' hubs, the sources and
/// derivations, the read pool and the settings.
struct ServerContext: Sendable {
    let store: EventStore
    let hubs: StreamHubs
    let sources: SourceRegistry
    let derivations: DerivationRegistry
    let reads: ReadPool
    let configuration: ServerConfiguration
    let logger: Logger
    /// Spans of traced events (`--otlp-endpoint`), or `.off`.
    var tracer = EventTracer.off

    /// A subscriber of `stream` arrived: its source or derivation connects (lazy) or runs
    /// while it stays (refcount). Disposed when it leaves.
    func lease(_ stream: String) -> any Disposable {
        StreamLeases(sources: sources, derivations: derivations).lease(stream)
    }

    var admin: StreamAdmin {
        StreamAdmin(
            store: store, hubs: hubs, sources: sources, derivations: derivations, reads: reads, defaultCapacity: configuration.defaultCapacity,
            allowSources: configuration.allowSocketSources)
    }
}

/// Serves one client connection until it closes.
///
/// Its `CommandRouter`, on the event loop, gives every command a reply slot in order and
/// hands PUBs straight to the writer; the rest reach this task, which acts on each without
/// waiting for the previous one to finish (pipelining) and fills its slot when the answer
/// is known; each subscription runs as its own task writing to the same channel. Any error
/// stays in this connection: other clients never notice.
///
/// One async style: a command's submission is its reply slot. The store answers on its
/// writer thread with a callback that fills the slot, so no task waits per command; what a
/// task must wait for (a subscription's start, its `+OK` written) is a `Pending`. PUB is
/// the one exception, and on purpose: it is the hot path, handed to the writer from the
/// event loop with no task hop, and answered through the connection's `RouterHandle` (a
/// sink and a token, not a closure per event) once per group commit, so a batch's `+OK`s
/// cost one hop and one write (see `CommandRouter`).
final class Connection: Sendable {
    let context: ServerContext
    private let channel: NIOAsyncChannel<RoutedCommand, ByteBuffer>
    let replies: ReplyChannel
    /// The connection's one lock: its subscriptions, their ids and tasks, and who its peer
    /// is. Never held while calling out (the store, a reply, a task's cancellation).
    let state: Locked<ConnectionState>
    let logger: Logger
    let id: UInt64

    init(context: ServerContext, accepted: AcceptedConnection, id: UInt64) {
        self.context = context
        self.channel = accepted.channel
        self.replies = accepted.replies
        self.id = id
        self.state = Locked(ConnectionState(maxSubscriptions: context.configuration.maxSubscriptionsPerConnection))
        var logger = context.logger
        logger[metadataKey: "connection"] = "\(id)"
        self.logger = logger
    }

    /// Serves the connection; `closing` runs once, just before the channel closes.
    func run(closing: @escaping @Sendable () -> Void) async {
        let closed = Locked(false)
        let closeOnce: @Sendable () -> Void = {
            if closed.withLock({ done in
                defer { done = true }; return !done
            }) {
                closing()
            }
        }
        defer { closeOnce() }
        if !context.configuration.access.isOpen {
            let peer = try? await PeerCredentials.of(channel.channel)
            guard let peer, context.configuration.access.allows(peer) else {
                logger.notice("connection refused", metadata: ["uid": "\(peer?.uid ?? 0)", "gid": "\(peer?.gid ?? 0)", "pid": "\(peer?.pid ?? 0)"])
                let who = peer.map { "uid \($0.uid), gid \($0.gid)" } ?? "an unknown peer"
                return await SocketListener.refuse(
                    channel,
                    ReplayError(
                        .forbidden, "\(who) may not use this replayd (--allow-uid/--allow-gid); ask its operator"))
            }
        }
        if let rules = context.configuration.socketRules {
            let peer = try? await PeerCredentials.of(channel.channel)
            let who = peer.map(rules.principal(for:)) ?? Principal(name: "an unknown peer", grants: [])
            state.withLock { $0.principal = who }
            replies.authorize(who, logger: logger)
        }
        replies.admit(hello: ServerFrame.hello(version: ReplayVersion.current, maxPayload: context.configuration.maxPayload))
        replies.acknowledge { [self] batch in acknowledgeOnLoop(batch) }
        do {
            try await channel.executeThenClose { inbound, outbound in
                let output = SubscriberOutput(outbound: outbound)
                await read(inbound, output: output)
                // Every reply owed (PUBs still committing included) goes out before the close.
                await replies.flushed()
                stopSubscriptions()
                closeOnce()
            }
        } catch {
            logger.debug("connection ended", metadata: ["error": "\(error)"])
        }
        stopSubscriptions()
    }

    private func read(
        _ inbound: NIOAsyncChannelInboundStream<RoutedCommand>,
        output: SubscriberOutput
    ) async {
        do {
            for try await item in inbound {
                let (action, ended) = state.withLock { $0.take(item.command) }
                ended?.cancel()
                perform(action, slot: item.slot, output: output)
                replies.performed()
                if case .close = action { return }
            }
        } catch let error as ReplayError {
            // A fatal framing error from the decoder: say why, then close.
            replies.send(.error(error))
        } catch {
            logger.debug("read failed", metadata: ["error": "\(error)"])
        }
    }

    /// The ACKs and NACKs of one read burst on the event loop, with no earlier command in
    /// this task: decided by the same state machine, submitted to the writer from there
    /// (nothing here waits), in order, consecutive ACKs of one member as one request.
    private func acknowledgeOnLoop(_ batch: [RoutedCommand]) {
        let actions = state.withLock { state in batch.map { state.take($0.command).0 } }
        var run = AcknowledgementRun()
        for (routed, action) in zip(batch, actions) {
            let slot = routed.slot
            switch action {
            case .reply(let frame): replies.fill(slot, with: frame)
            case .close(let error): replies.fill(slot, with: .error(error))
            case .perform(.ack(let sid, let sequence, let stream)):
                acknowledge(sid: sid, sequence: sequence, stream: stream, slot: slot, into: &run)
            case .perform(.nack(let sid, let sequence, let stream, let delay)):
                run.submit(to: context.store, replies: replies)
                giveBack(sid: sid, sequence: sequence, stream: stream, delay: delay ?? 0, slot: slot)
            case .perform(let other):
                // The router hands over only ACK and NACK.
                replies.fill(slot, with: .error(ReplayError(.badCommand, "\(other) is not taken on the event loop")))
            }
        }
        run.submit(to: context.store, replies: replies)
    }

    /// Acts on one command; its reply fills `slot`, now or when the work is done. Returns
    /// once its effect is submitted (to the writer, or the position fixed), so commands
    /// take effect in the order they were sent.
    private func perform(_ action: ConnectionState.Action, slot: ReplyOrder.Slot, output: SubscriberOutput) {
        let replies = self.replies
        let command: ClientCommand
        switch action {
        case .reply(let frame): return replies.fill(slot, with: frame)
        case .close(let error): return replies.fill(slot, with: .error(error))
        case .perform(let performed): command = performed
        }
        // A PUB that followed other commands through this task (see CommandRouter).
        if context.store.submitPublish(command, sink: replies.sink, token: slot, tracer: context.tracer) { return }
        // A SUB's window and `hash=on` are wrappers around it: taken off once, for every kind.
        let (plain, window, hashes) = Self.parts(of: command)
        switch plain {
        case .ack(let sid, let sequence, let stream):
            acknowledge(sid: sid, sequence: sequence, stream: stream, slot: slot)
        case .nack(let sid, let sequence, let stream, let delay):
            giveBack(sid: sid, sequence: sequence, stream: stream, delay: delay ?? 0, slot: slot)
        case .subscribeGroup(let stream, let sid, let start, let options):
            join(stream, sid: sid, start: start, options: options, hashes: hashes, slot: slot)
        case .subscribePatternGroup(let pattern, let sid, let start, let options):
            join(pattern, sid: sid, start: start, options: options, hashes: hashes, slot: slot)
        case .unsubscribe:
            // The state machine freed the id and handed back the task, cancelled above.
            replies.fill(slot, with: .ok)
        case .subscribe, .subscribeDurable:
            subscribe(plain, credit: window.map(SubscriptionCredit.init(window:)), hashes: hashes, slot: slot, output: output)
        case .filtered(let subscription, let program):
            let filter: EventFilter
            do throws(JQProgram.Failure) {
                filter = try EventFilter(program, budget: context.configuration.programBudget)
            } catch {
                let refusal = ReplayError(.invalidConfig, "the filter is refused: \(error.message)")
                guard let sid = Self.sid(of: subscription) else { return replies.fill(slot, with: .error(refusal)) }
                return refuse(sid, token: nil, slot: slot, refusal)
            }
            let inner = Self.parts(of: subscription)
            subscribe(
                inner.plain, credit: inner.window.map(SubscriptionCredit.init(window:)), filter: filter, hashes: inner.hashes, slot: slot,
                output: output)
        case .more(let sid, let count):
            guard let credit = state.withLock({ $0.running(sid)?.credit }) else {
                return replies.fill(slot, with: .error(ReplayError(.badCommand, "subscription '\(sid)' has no window (SUB … window=<n>) to grant")))
            }
            credit.give(count)
            replies.fill(slot, with: .ok)
        case .subscribePattern(let pattern, let sid, let start):
            subscribe(pattern, sid: sid, start: start, hashes: hashes, slot: slot, output: output)
        case .backup(let path):
            backUp(to: path, slot: slot)
        case .verify(let streams, let through):
            verify(streams, through: through, slot: slot)
        default:
            var admin = context.admin
            admin.principal = state.withLock { $0.principal }
            admin.submit(command) { replies.fill(slot, with: $0) }
        }
    }

    /// Who is at the other end (`SO_PEERCRED`), if the socket says.
    func peer() async -> PeerCredentials? {
        try? await PeerCredentials.of(channel.channel)
    }

    /// The id a SUB of one stream names (windowed, hashed or not).
    private static func sid(of command: ClientCommand) -> String? {
        switch command {
        case .subscribe(_, let sid, _), .subscribeDurable(_, let sid, _, _): sid
        case .windowed(let inner, _), .hashed(let inner): sid(of: inner)
        default: nil
        }
    }

    /// A command without the wrappers the parser may put around a SUB, in any order: its
    /// window and whether its events carry their hashes (any other command as it is).
    private static func parts(of command: ClientCommand) -> (plain: ClientCommand, window: Int?, hashes: Bool) {
        switch command {
        case .windowed(let inner, let window):
            let (plain, _, hashes) = parts(of: inner)
            return (plain, window, hashes)
        case .hashed(let inner):
            let (plain, window, _) = parts(of: inner)
            return (plain, window, true)
        default: return (command, nil, false)
        }
    }

    /// A SUB of one stream, plain or durable, with its window's credit if it has one.
    private func subscribe(
        _ command: ClientCommand, credit: SubscriptionCredit?, filter: EventFilter? = nil, hashes: Bool = false, slot: ReplyOrder.Slot,
        output: SubscriberOutput
    ) {
        let (stream, sid, start, consumer): (String, String, StartPosition, String?)
        switch command {
        case .subscribe(let name, let id, let from): (stream, sid, start, consumer) = (name, id, from, nil)
        case .subscribeDurable(let name, let id, let from, let durable): (stream, sid, start, consumer) = (name, id, from, durable)
        default: return replies.fill(slot, with: .error(ReplayError(.badCommand, "\(command.verb) is not a SUB of one stream")))
        }
        let position = SubscriptionStart(context: context).resolve(stream, start, consumer: consumer)
        subscribe(
            stream: stream, sid: sid, position: position, consumer: consumer, credit: credit, filter: filter, hashes: hashes, slot: slot,
            output: output)
    }

    /// Fixes the start position now, in command order (so `SUB s new` then `PUB s` sees
    /// the event), answers, and only once `+OK` is written starts the cursor, so a client
    /// sees its subscription confirmed before its events.
    private func subscribe(
        stream: String, sid: String, position: Pending<Result<StartPoint, ReplayError>>, consumer: String?,
        credit: SubscriptionCredit?, filter: EventFilter?, hashes: Bool, slot: ReplyOrder.Slot, output: SubscriberOutput
    ) {
        // Made and registered under one lock: a subscription that ends at once (an
        // unknown stream) unregisters itself only after it was registered.
        let phase = SubscriptionPhase(stream: stream)
        state.withLock { state in
            _ = state.started(sid) { token in
                let task = Task { [self] in
                    await runSubscription(
                        stream: stream, sid: sid, token: token, position: position, slot: slot,
                        phase: phase, output: output, credit: credit, filter: filter, hashes: hashes)
                    phase.enter(.finished)
                    subscriptionFinished(sid, token: token)
                }
                return ConnectionState.Running(task: task, phase: phase, consumer: consumer, credit: credit)
            }
        }
    }

    /// A pattern's subscription: its streams and their starts are fixed now, in command
    /// order; it delivers once its `+OK` is written.
    private func subscribe(
        _ pattern: StreamPattern, sid: String, start: StartPosition, hashes: Bool = false, slot: ReplyOrder.Slot, output: SubscriberOutput
    ) {
        let begun = PatternSubscription.start(pattern, start, hubs: context.hubs)
        let subscription = PatternSubscription(pattern: pattern, sid: sid, context: context, output: output, hashes: hashes)
        let phase = SubscriptionPhase(stream: pattern.description)
        let started = state.withLock { state in
            state.started(sid) { token in
                let task = Task { [self] in
                    if await answerOK(slot, phase: phase) {
                        await subscription.run(begun)
                    } else {
                        context.hubs.unwatch(begun.token)
                    }
                    phase.enter(.finished)
                    subscriptionFinished(sid, token: token)
                }
                return ConnectionState.Running(task: task, phase: phase)
            }
        }
        if started == nil { context.hubs.unwatch(begun.token) }
    }

    private func runSubscription(
        stream: String, sid: String, token: UInt64, position: Pending<Result<StartPoint, ReplayError>>,
        slot: ReplyOrder.Slot,
        phase: SubscriptionPhase,
        output: SubscriberOutput,
        credit: SubscriptionCredit?,
        filter: EventFilter?,
        hashes: Bool
    ) async {
        let start: StartPoint
        switch await position.value {
        case .success(let resolved): start = resolved
        case .failure(let error): return refuse(sid, token: token, slot: slot, error)
        }
        guard let hub = context.hubs[stream] else {
            return refuse(sid, token: token, slot: slot, ReplayError(StoreError.unknownStream(stream)))
        }
        guard await answerOK(slot, phase: phase) else { return }
        // A lazy or refcount source connects for its first subscriber (after +OK, so the
        // subscriber is counted before the source's first events).
        let lease = context.lease(stream)
        let log = PooledStore(store: context.store, reads: context.reads)
        await Subscription(
            stream: stream, sid: sid, hub: hub, log: log, phase: phase, output: output, credit: credit, filter: filter, hashes: hashes,
            tracer: context.tracer
        )
        .run(from: start.next, liveAfter: start.liveAfter, snapshot: start.snapshot)
        lease.dispose()
    }

    /// A SUB's `+OK`, and the wait until it is written, so that the subscription's first
    /// frame comes after it: whether to deliver (`false`: the task was cancelled first).
    func answerOK(_ slot: ReplyOrder.Slot, phase: SubscriptionPhase) async -> Bool {
        let written = Pending<Void>()
        phase.enter(.awaitingOKWritten)
        replies.fill(slot, with: .ok, afterWrite: { written.fulfil(()) })
        guard await written.valueUnlessCancelled() != nil else { return false }
        phase.enter(.delivering)
        return true
    }

    /// A subscription is over (ended, failed to start, or cancelled): its id is free,
    /// unless it was already unsubscribed and reused.
    func subscriptionFinished(_ sid: String, token: UInt64) {
        state.withLock { $0.subscriptionEnded(sid, token: token) }
    }

    /// A SUB refused after the state machine reserved its id (an unknown stream, a bad
    /// start, a group's settings): the id is freed before the refusal is written, so a
    /// client that reads the refusal may use the id again at once. Freed after, as the
    /// subscription's task ends, a SUB sent on reading it could find the id still in use.
    /// `token`: the subscription's, once its task was registered (`nil`: not yet).
    func refuse(_ sid: String, token: UInt64?, slot: ReplyOrder.Slot, _ error: ReplayError) {
        state.withLock { $0.subscriptionEnded(sid, token: token) }
        replies.fill(slot, with: .error(error))
    }

    private func stopSubscriptions() {
        for task in state.withLock({ $0.removeAll() }) { task.cancel() }
    }

    /// One line for the daemon's state dump: each subscription and where it stands, and
    /// the replies still owed.
    var stateDescription: String {
        let entries = state.withLock { $0.entries }.sorted { $0.key < $1.key }
        let subscriptions = entries.map { sid, entry in
            guard let running = entry.running else { return "\(sid): being started" }
            return "\(sid) on \(running.phase.stream): \(running.phase.current)"
        }
        return "connection \(id): subscriptions [\(subscriptions.joined(separator: "; "))], " + replies.stateDescription
    }
}
