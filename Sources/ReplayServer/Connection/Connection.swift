import Foundation
import Logging
import NIOCore
import ReplayCore
import ReplayProtocol
import ReplayStore

/// What every connection shares: the store, the streams' hubs, the sources, the read pool
/// and the settings.
struct ServerContext: Sendable {
    let store: EventStore
    let hubs: StreamHubs
    let sources: SourceRegistry
    let reads: ReadPool
    let configuration: ServerConfiguration
    let logger: Logger

    var admin: StreamAdmin {
        StreamAdmin(
            store: store, hubs: hubs, sources: sources, defaultCapacity: configuration.defaultCapacity,
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
final class Connection: Sendable {
    private let context: ServerContext
    private let channel: NIOAsyncChannel<RoutedCommand, ByteBuffer>
    private let replies: ReplyChannel
    private let state: Locked<ConnectionState>
    /// A running subscription, with a token so that a finishing task only unregisters
    /// itself, never a newer subscription that reused its sid.
    private struct Registered {
        let token: UInt64
        let task: Task<Void, Never>
        let phase: SubscriptionPhase
        /// A durable subscription's consumer, whose position ACK moves.
        let consumer: String?
    }

    private struct SubscriptionTable {
        var bySid: [String: Registered] = [:]
        var nextToken: UInt64 = 0
    }

    private let subscriptions = Locked(SubscriptionTable())
    private let logger: Logger
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
        replies.admit(hello: ServerFrame.hello(version: ReplayVersion.current, maxPayload: context.configuration.maxPayload))
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
                let action = state.withLock { $0.receive(item.command) }
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
        if context.store.submitPublish(command, sink: replies.sink, token: slot) { return }
        switch command {
        case .ack(let sid, let sequence):
            acknowledge(sid: sid, sequence: sequence, slot: slot)
        case .unsubscribe(let sid):
            subscriptions.withLock { $0.bySid.removeValue(forKey: sid) }?.task.cancel()
            replies.fill(slot, with: .ok)
        case .subscribe(let stream, let sid, let start):
            subscribe(stream: stream, sid: sid, position: resolve(stream: stream, start: start), consumer: nil, slot: slot, output: output)
        case .subscribeDurable(let stream, let sid, let start, let consumer):
            subscribe(
                stream: stream, sid: sid, position: resolveDurable(stream: stream, start: start, consumer: consumer),
                consumer: consumer, slot: slot, output: output)
        default:
            context.admin.submit(command) { replies.fill(slot, with: $0) }
        }
    }

    /// Fixes the start position now, in command order (so `SUB s new` then `PUB s` sees
    /// the event), answers, and only once `+OK` is written starts the cursor, so a client
    /// sees its subscription confirmed before its events.
    private func subscribe(
        stream: String, sid: String, position: Pending<Result<StartPoint, ReplayError>>, consumer: String?,
        slot: ReplyOrder.Slot, output: SubscriberOutput
    ) {
        // Finished once the `+OK` is written; the standard library's stream remembers a
        // finish that comes before the wait, and ends the wait if the task is cancelled.
        let written = AsyncStream.makeStream(of: Void.self)
        // Made and registered under one lock: a subscription that ends at once (an
        // unknown stream) unregisters itself only after it was registered.
        let phase = SubscriptionPhase(stream: stream)
        subscriptions.withLock { subscriptions in
            let token = subscriptions.nextToken
            subscriptions.nextToken += 1
            let task = Task { [self] in
                await runSubscription(
                    stream: stream, sid: sid, position: position, slot: slot, written: written,
                    phase: phase, output: output)
                phase.enter(.finished)
                subscriptionFinished(sid, token: token)
            }
            subscriptions.bySid[sid] = Registered(token: token, task: task, phase: phase, consumer: consumer)
        }
    }

    private func runSubscription(
        stream: String, sid: String, position: Pending<Result<StartPoint, ReplayError>>,
        slot: ReplyOrder.Slot, written: (stream: AsyncStream<Void>, continuation: AsyncStream<Void>.Continuation),
        phase: SubscriptionPhase,
        output: SubscriberOutput
    ) async {
        let start: StartPoint
        switch await position.value {
        case .success(let resolved): start = resolved
        case .failure(let error): return replies.fill(slot, with: .error(error))
        }
        guard let hub = context.hubs[stream] else {
            return replies.fill(slot, with: .error(ReplayError(StoreError.unknownStream(stream))))
        }
        phase.enter(.awaitingOKWritten)
        replies.fill(slot, with: .ok, afterWrite: { written.continuation.finish() })
        for await _ in written.stream {}
        phase.enter(.delivering)
        // A lazy or refcount source connects for its first subscriber (after +OK, so the
        // subscriber is counted before the source's first events).
        let lease = context.sources.lease(stream)
        await Subscription(stream: stream, sid: sid, hub: hub, store: context.store, reads: context.reads, phase: phase, output: output)
            .run(from: start.next, liveAfter: start.liveAfter)
        lease.dispose()
    }

    /// A subscription is over (ended, failed to start, or cancelled): its id is free,
    /// unless it was already unsubscribed and reused.
    private func subscriptionFinished(_ sid: String, token: UInt64) {
        let current = subscriptions.withLock { subscriptions -> Bool in
            guard subscriptions.bySid[sid]?.token == token else { return false }
            subscriptions.bySid[sid] = nil
            return true
        }
        if current { state.withLock { $0.subscriptionEnded(sid) } }
    }

    /// Where a new subscription starts, decided now: from the hub's
    /// state for an existing stream; for a stream this SUB creates, the whole (empty) log.
    private func resolve(stream: String, start: StartPosition) -> Pending<Result<StartPoint, ReplayError>> {
        if let hub = context.hubs[stream] {
            if let position = hub.start(start) { return Pending(.success(position)) }
            guard case .since(let seconds) = start else { preconditionFailure("the hub resolves every start but since") }
            return firstSequence(of: stream, since: seconds, liveAfter: hub.info.lastSequence)
        }
        guard context.configuration.autoCreate else {
            return Pending(.failure(ReplayError(StoreError.unknownStream(stream))))
        }
        let next: UInt64 = if case .from(let sequence) = start { max(1, sequence) } else { 1 }
        let pending = Pending<Result<StartPoint, ReplayError>>()
        context.store.create(stream, config: StreamConfig(capacity: context.configuration.defaultCapacity)) { result in
            switch result {
            case .success, .failure(.streamExists): pending.fulfil(.success(StartPoint(next: next, liveAfter: 0)))
            case .failure(let error): pending.fulfil(.failure(ReplayError(error)))
            }
        }
        return pending
    }

    /// A durable consumer's start, decided now in command order by the writer: after its
    /// acknowledged position, or from `start` on first use (for `since`, once the read pool
    /// has found that position).
    private func resolveDurable(stream: String, start: StartPosition, consumer: String) -> Pending<Result<StartPoint, ReplayError>> {
        let pending = Pending<Result<StartPoint, ReplayError>>()
        let store = context.store
        let open: @Sendable (_ initialNext: @escaping @Sendable (StreamInfo) -> UInt64) -> Void = { initialNext in
            store.openConsumer(consumer, of: stream, initialNext: initialNext) { result in
                pending.fulfil(result.map { StartPoint(next: $0.ackedSequence + 1, liveAfter: $0.lastSequence) }.mapError(ReplayError.init))
            }
        }
        if context.hubs[stream] == nil {
            guard context.configuration.autoCreate else { return Pending(.failure(ReplayError(StoreError.unknownStream(stream)))) }
            store.create(stream, config: StreamConfig(capacity: context.configuration.defaultCapacity)) { _ in }
        }
        guard case .since(let seconds) = start else {
            open { info in start.next(in: info) ?? info.firstSequence }
            return pending
        }
        let reads = context.reads
        Task {
            let first = try? await reads.run { try store.firstSequence(stream, since: Date(timeIntervalSince1970: seconds)) }
            open { info in first ?? info.lastSequence + 1 }
        }
        return pending
    }

    /// ACK for a durable subscription: the consumer's position moves once committed.
    private func acknowledge(sid: String, sequence: UInt64, slot: ReplyOrder.Slot) {
        let (registered, stream) = subscriptions.withLock { ($0.bySid[sid], $0.bySid[sid]?.phase.stream) }
        guard let stream, let consumer = registered?.consumer else {
            let reason = registered == nil ? "subscription '\(sid)' has ended" : "subscription '\(sid)' is not durable (SUB … durable=<name>)"
            return replies.fill(slot, with: .error(ReplayError(.invalidAck, "\(reason); nothing changed")))
        }
        let replies = self.replies
        context.store.acknowledge(sequence, consumer: consumer, of: stream) { result in
            switch result {
            case .success: replies.fill(slot, with: .ok)
            case .failure(let error): replies.fill(slot, with: .error(ReplayError(error)))
            }
        }
    }

    /// A `since` start: the first retained event at or after the time, found on the read pool.
    private func firstSequence(of stream: String, since seconds: Double, liveAfter: UInt64) -> Pending<Result<StartPoint, ReplayError>> {
        let pending = Pending<Result<StartPoint, ReplayError>>()
        let (store, reads) = (context.store, context.reads)
        Task {
            do {
                let first = try await reads.run { try store.firstSequence(stream, since: Date(timeIntervalSince1970: seconds)) }
                pending.fulfil(.success(StartPoint(next: first, liveAfter: liveAfter)))
            } catch let error as StoreError {
                pending.fulfil(.failure(ReplayError(error)))
            } catch {
                pending.fulfil(.failure(ReplayError(.internal, "\(error)")))
            }
        }
        return pending
    }

    private func stopSubscriptions() {
        let tasks = subscriptions.withLock { subscriptions in
            defer { subscriptions.bySid = [:] }
            return subscriptions.bySid.values.map(\.task)
        }
        for task in tasks { task.cancel() }
    }

    /// One line for the daemon's state dump: each subscription and where it stands, and
    /// the replies still owed.
    var stateDescription: String {
        let subscriptions = self.subscriptions.withLock { table in
            table.bySid.sorted { $0.key < $1.key }.map { sid, registered in
                "\(sid) on \(registered.phase.stream): \(registered.phase.current)"
            }
        }
        let sids = state.withLock { $0.subscriptions.sorted() }
        return "connection \(id): subscriptions [\(subscriptions.joined(separator: "; "))], sids in use \(sids), "
            + replies.stateDescription
    }
}
