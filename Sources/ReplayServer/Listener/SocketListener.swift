import Foundation
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import ReplayProtocol
import ReplayStore
import ReplaySync
import ServiceLifecycle
import Synchronization

/// The Unix-socket front door as a service: binds (with the socket's final mode), admits
/// and serves connections, and at the group's graceful shutdown quiesces: stops accepting,
/// tells every connection to stop reading (NIOExtras' `ServerQuiescingHelper` sends each
/// one `ChannelShouldQuiesceEvent`), waits until each has answered what it read and
/// closed, then removes the socket file.
///
/// Its state is checked again after every await (the shape of hummingbird's `Server`): a
/// shutdown that arrives while the socket is being bound closes it as soon as it exists.
final class SocketListener: Service, Sendable {
    private enum State {
        case initial
        case starting
        case running(ServerQuiescingHelper)
        case shuttingDown
        case finished
    }

    /// Connections the kernel queues before they are accepted.
    static let backlog: Int32 = 256

    private let configuration: ServerConfiguration
    private let context: ServerContext
    private let logger: Logger
    private let state = Locked(State.initial)
    private let connections = Locked<[UInt64: Connection]>([:])
    private let nextConnectionID = Atomic<UInt64>(0)
    private let readThreads = NIOThreadPool(numberOfThreads: 2)
    /// Told once the socket listens.
    private let ready: DaemonReadiness?

    init(
        configuration: ServerConfiguration, store: EventStore, hubs: StreamHubs, sources: SourceRegistry, derivations: DerivationRegistry,
        ready: DaemonReadiness? = nil, tracer: EventTracer = .off, logger: Logger
    ) {
        self.configuration = configuration
        self.ready = ready
        self.logger = logger
        var context = ServerContext(
            store: store, hubs: hubs, sources: sources, derivations: derivations, reads: ReadPool(pool: readThreads),
            configuration: configuration, logger: logger)
        context.tracer = tracer
        self.context = context
    }

    func run() async throws {
        let proceed = try state.withLock { state -> Bool in
            switch state {
            case .initial: state = .starting; return true
            case .shuttingDown: state = .finished; return false  // shut down before it started
            case .starting, .running, .finished: throw ReplayServerError("the socket listener runs once")
            }
        }
        guard proceed else { return }
        let fileLimit = FileLimits.raise()
        let quiesce = ServerQuiescingHelper(group: MultiThreadedEventLoopGroup.singleton)
        let serverChannel: NIOAsyncChannel<AcceptedConnection, Never>
        do {
            serverChannel = try await bind(quiesce)
        } catch {
            state.withLock { $0 = .finished }
            throw ReplayServerError("cannot listen on \(configuration.socketPath): \(error)")
        }
        let inode = SocketFile.inode(configuration.socketPath)
        readThreads.start()
        let stateDump = StateDump(logger: logger) { [connections, context] in
            let open = connections.withLock { $0.values.sorted { $0.id < $1.id } }
            return ["\(open.count) connections"] + open.map(\.stateDescription) + context.hubs.all.map(\.stateDescription)
        }
        let shutDownWhileBinding = state.withLock { state -> Bool in
            guard case .starting = state else { return true }
            state = .running(quiesce)
            return false
        }
        if shutDownWhileBinding {
            quiesce.initiateShutdown(promise: nil)
        } else {
            logger.info(
                "replayd \(ReplayVersion.current) ready",
                metadata: [
                    "socket": "\(configuration.socketPath)", "database": "\(context.store.location)",
                    "durability": "\(configuration.durability.rawValue)", "streams": "\(context.store.streams.count)",
                    "max_connections": "\(configuration.maxConnections)", "fd_limit": "\(fileLimit)",
                    "inherited": "\(configuration.inheritedSocket.map { "from systemd (\($0.name))" } ?? "no")",
                    "allocator": "\(configuration.allocator ?? "the C library's")",
                ])
            ready?.listening(.socket)
        }

        await withGracefulShutdownHandler {
            await serve(serverChannel)
        } onGracefulShutdown: {
            self.shutDown()
        }

        stateDump.stop()
        try? await readThreads.shutdownGracefully()
        // The file of a socket systemd passed is systemd's to remove.
        if configuration.inheritedSocket == nil { SocketFile.remove(configuration.socketPath, inode: inode) }
        state.withLock { $0 = .finished }
    }

    /// Connections served now.
    var connectionCount: Int { connections.withLock { $0.count } }

    /// Stop accepting; every connection answers what it read, then closes.
    private func shutDown() {
        let quiesce = state.withLock { state -> ServerQuiescingHelper? in
            switch state {
            case .initial, .starting:
                state = .shuttingDown
                return nil
            case .running(let quiesce):
                state = .shuttingDown
                return quiesce
            case .shuttingDown, .finished:
                return nil
            }
        }
        guard let quiesce else { return }
        logger.info("shutting down: draining connections")
        quiesce.initiateShutdown(promise: nil)
    }

    /// Accepts until the server channel closes, then waits for every connection to end.
    private func serve(_ serverChannel: NIOAsyncChannel<AcceptedConnection, Never>) async {
        do {
            try await withThrowingDiscardingTaskGroup { group in
                try await serverChannel.executeThenClose { inbound in
                    for try await accepted in inbound {
                        let id = nextConnectionID.wrappingAdd(1, ordering: .relaxed).newValue
                        let connection = Connection(context: context, accepted: accepted, id: id)
                        let admitted = connections.withLock { connections -> Bool in
                            guard connections.count < configuration.maxConnections else { return false }
                            connections[id] = connection
                            return true
                        }
                        guard admitted else {
                            group.addTask { [configuration] in
                                await Self.refuse(
                                    accepted.channel,
                                    ReplayError(
                                        .tooManyConnections,
                                        "replayd has \(configuration.maxConnections) connections, its limit (--max-connections); retry later"))
                            }
                            continue
                        }
                        DaemonMetrics.connections.increment()
                        group.addTask {
                            // Its place is given back before the socket closes, so a client
                            // that saw the close can count on it.
                            await connection.run {
                                self.connections.withLock { _ = $0.removeValue(forKey: id) }
                                DaemonMetrics.connections.decrement()
                            }
                        }
                    }
                }
            }
        } catch {
            logger.error("listener failed", metadata: ["error": "\(error)"])
        }
    }

    /// Answers a connection that will not be served with one error, then closes it.
    static func refuse(_ channel: NIOAsyncChannel<RoutedCommand, ByteBuffer>, _ error: ReplayError) async {
        try? await channel.executeThenClose { _, outbound in
            try await outbound.write(ServerFrame.error(error).bytes)
        }
    }

    private func bind(_ quiesce: ServerQuiescingHelper) async throws -> NIOAsyncChannel<AcceptedConnection, Never> {
        let (configuration, store, tracer) = (self.configuration, context.store, context.tracer)
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(quiesce.makeServerChannelHandler(channel: channel))
                }
            }
            // A client may send its commands and close its side (`socat` does at end of
            // input): it still gets every answer before the connection closes.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
        let accept: @Sendable (any Channel) -> EventLoopFuture<AcceptedConnection> = { channel in
            channel.eventLoop.makeCompletedFuture {
                let router = CommandRouter(
                    store: store, maxOwed: configuration.maxPendingRepliesPerConnection, limits: configuration.connectionLimits, tracer: tracer,
                    decoder: CommandDecoder(maxLineLength: configuration.maxLineLength, maxPayload: configuration.maxPayload))
                try channel.pipeline.syncOperations.addHandler(router)
                let async = try NIOAsyncChannel<RoutedCommand, ByteBuffer>(
                    wrappingChannelSynchronously: channel,
                    configuration: .init(backPressureStrategy: .init(lowWatermark: 64, highWatermark: 256)))
                return AcceptedConnection(channel: async, replies: ReplyChannel(router))
            }
        }
        // systemd's socket, as it made it (its mode is the unit's SocketMode=).
        if let inherited = configuration.inheritedSocket {
            return try await bootstrap.bind(inherited.descriptor, childChannelInitializer: accept)
        }
        // The socket with exactly the configured mode (0600 unless widened): never briefly
        // open to others, and already final when the first client connects.
        let descriptor = try SocketFile.listen(at: configuration.socketPath, mode: configuration.socketMode, backlog: Self.backlog)
        return try await bootstrap.bind(descriptor, childChannelInitializer: accept)
    }
}
