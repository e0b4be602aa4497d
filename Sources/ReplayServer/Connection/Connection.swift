import Foundation
import Logging
import NIOCore
import ReplayProtocol
import ReplayStore
import Synchronization

/// What every connection shares: the store, the hub, the read pool and the settings.
struct ServerContext: Sendable {
    let store: EventStore
    let hub: Hub
    let reads: ReadPool
    let configuration: ServerConfiguration
    let logger: Logger

    var admin: StreamAdmin {
        StreamAdmin(store: store, hub: hub, defaultCapacity: configuration.defaultCapacity)
    }
}

/// Serves one client connection until it closes.
///
/// The reader takes commands in order and acts on each without waiting for the previous
/// one to finish (pipelining); replies go out in command order through the `ReplyQueue`;
/// each subscription runs as its own task writing to the same channel. Any error stays in
/// this connection: other clients never notice.
final class Connection: Sendable {
    private let context: ServerContext
    private let channel: NIOAsyncChannel<InboundCommand, ByteBuffer>
    private let state: Mutex<ConnectionState>
    private let subscriptions = Mutex<[String: Task<Void, Never>]>([:])
    private let logger: Logger

    init(context: ServerContext, channel: NIOAsyncChannel<InboundCommand, ByteBuffer>, id: UInt64) {
        self.context = context
        self.channel = channel
        self.state = Mutex(ConnectionState(maxSubscriptions: context.configuration.maxSubscriptionsPerConnection))
        var logger = context.logger
        logger[metadataKey: "connection"] = "\(id)"
        self.logger = logger
    }

    /// Stops reading new commands; what was read is still answered, then the connection
    /// closes. Used by the server's graceful shutdown.
    func drain() {
        state.withLock { $0.drain() }
        channel.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
    }

    func run() async {
        do {
            try await channel.executeThenClose { inbound, outbound in
                let replies = ReplyQueue()
                let write: @Sendable (ByteBuffer) async throws -> Void = { try await outbound.write($0) }
                try await outbound.write(ServerFrame.hello(version: ReplayVersion.current, maxPayload: context.configuration.maxPayload).bytes)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await replies.run(write) }
                    await read(inbound, replies: replies, write: write)
                    replies.finish()
                    try await group.waitForAll()
                }
                stopSubscriptions()
            }
        } catch {
            logger.debug("connection ended", metadata: ["error": "\(error)"])
        }
        stopSubscriptions()
    }

    private func read(
        _ inbound: NIOAsyncChannelInboundStream<InboundCommand>, replies: ReplyQueue,
        write: @escaping @Sendable (ByteBuffer) async throws -> Void
    ) async {
        do {
            for try await item in inbound {
                let action = state.withLock { $0.receive(item) }
                if case .close(let error) = action {
                    replies.send(.error(error))
                    return
                }
                perform(action, replies: replies, write: write)
                await replies.waitForSpace(limit: context.configuration.maxPendingRepliesPerConnection)
            }
        } catch let error as ReplayError {
            // A fatal framing error from the decoder: say why, then close.
            replies.send(.error(error))
        } catch {
            logger.debug("read failed", metadata: ["error": "\(error)"])
        }
    }

    private func perform(_ action: ConnectionState.Action, replies: ReplyQueue, write: @escaping @Sendable (ByteBuffer) async throws -> Void) {
        switch action {
        case .reply(let frame):
            replies.send(frame)
        case .close(let error):
            replies.send(.error(error))
        case .publish(let stream, let payload):
            let slot = replies.reserve()
            context.store.append(Data(payload.readableBytesView), to: stream) { result in
                switch result {
                case .success(let event): replies.fill(slot, with: .published(sequence: event.sequence))
                case .failure(let error): replies.fill(slot, with: .error(ReplayError(error)))
                }
            }
        case .admin(let command):
            let slot = replies.reserve()
            let admin = context.admin
            Task { replies.fill(slot, with: await admin.perform(command)) }
        case .unsubscribe(let sid):
            subscriptions.withLock { $0.removeValue(forKey: sid) }?.cancel()
            replies.send(.ok)
        case .subscribe(let stream, let sid, let start):
            subscribe(stream: stream, sid: sid, start: start, replies: replies, write: write)
        }
    }

    /// Resolves the stream and the start position, answers, and only once `+OK` is written
    /// starts the cursor, so a client sees its subscription confirmed before its events.
    private func subscribe(
        stream: String, sid: String, start: StartPosition, replies: ReplyQueue,
        write: @escaping @Sendable (ByteBuffer) async throws -> Void
    ) {
        let written = Doorbell()
        let slot = replies.reserve(afterWrite: { written.ring() })
        let context = self.context
        let task = Task { [self] in
            let resolved: (hub: StreamHub, next: UInt64, liveAfter: UInt64)
            do throws(ReplayError) {
                resolved = try await resolve(stream: stream, start: start)
            } catch {
                state.withLock { $0.subscriptionEnded(sid) }
                subscriptions.withLock { _ = $0.removeValue(forKey: sid) }
                replies.fill(slot, with: .error(error))
                return
            }
            replies.fill(slot, with: .ok)
            await written.wait()
            await Subscription(
                stream: stream, sid: sid, hub: resolved.hub, store: context.store, reads: context.reads, write: write
            ).run(from: resolved.next, liveAfter: resolved.liveAfter)
            state.withLock { $0.subscriptionEnded(sid) }
            subscriptions.withLock { _ = $0.removeValue(forKey: sid) }
        }
        subscriptions.withLock { $0[sid] = task }
    }

    private func resolve(stream: String, start: StartPosition) async throws(ReplayError) -> (hub: StreamHub, next: UInt64, liveAfter: UInt64) {
        var hub = context.hub[stream]
        if hub == nil, context.configuration.autoCreate {
            do {
                _ = try await context.store.create(stream, config: StreamConfig(capacity: context.configuration.defaultCapacity))
            } catch .streamExists {
                // Created meanwhile with other settings: use it as it is.
            } catch {
                throw ReplayError(error)
            }
            hub = context.hub[stream]
        }
        guard let hub else {
            throw ReplayError(StoreError.unknownStream(stream))
        }
        let resolvedStart: ReplayStart
        switch start {
        case .all: resolvedStart = .all
        case .new: resolvedStart = .new
        case .from(let sequence): resolvedStart = .from(sequence)
        case .last(let count): resolvedStart = .last(count)
        case .since(let seconds):
            let store = context.store
            do {
                let liveAfter = hub.info.lastSequence
                let first = try await context.reads.run {
                    try store.firstSequence(stream, since: Date(timeIntervalSince1970: seconds))
                }
                return (hub, first, liveAfter)
            } catch let error as StoreError {
                throw ReplayError(error)
            } catch {
                throw ReplayError(.internal, "\(error)")
            }
        }
        let (next, liveAfter) = hub.start(resolvedStart)
        return (hub, next, liveAfter)
    }

    private func stopSubscriptions() {
        let tasks = subscriptions.withLock { tasks in
            defer { tasks = [:] }
            return Array(tasks.values)
        }
        for task in tasks { task.cancel() }
    }
}
