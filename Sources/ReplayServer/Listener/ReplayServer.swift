import Foundation
import Logging
import NIOCore
import NIOPosix
import ReplayCore
import ReplayProtocol
import ReplayStore
import ServiceLifecycle
import Synchronization

/// The daemon: named streams over a Unix-domain socket, as a swift-service-lifecycle
/// `Service`.
///
/// Start-up: check the socket path (refuse a live daemon, replace a stale socket), open
/// the store (O(streams)), bind, set the socket's mode, log one line. Graceful shutdown is
/// an ordered drain: stop accepting; stop reading commands; answer what was read (PUB acks
/// after their commits); close subscribers; close the store (commit, checkpoint); remove
/// the socket file.
public final class ReplayServer: Service {
    public let configuration: ServerConfiguration
    private let logger: Logger
    private let connections = Locked<[UInt64: Connection]>([:])
    private let nextConnectionID = Atomic<UInt64>(0)

    public init(configuration: ServerConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    public func run() async throws {
        let configuration = self.configuration
        try SocketFile.prepare(configuration.socketPath)
        try Self.makeParentFolder(of: configuration.databasePath)

        let store = try EventStore(
            path: configuration.databasePath,
            options: .init(
                durability: configuration.durability,
                autoCreate: configuration.autoCreate ? StreamConfig(capacity: configuration.defaultCapacity) : nil))
        let hub = Hub(store: store, tailEvents: configuration.tailEvents, tailBytes: configuration.tailBytes)
        let sources = SourceRegistry(store: store, logger: logger)
        if let path = configuration.declarationsPath {
            do {
                try await StreamDeclarations.load(path).apply(to: store, defaultCapacity: configuration.defaultCapacity)
            } catch {
                await Self.close(store)
                throw error
            }
        }
        let fileLimit = FileLimits.raise()
        let pool = NIOThreadPool(numberOfThreads: 2)
        pool.start()
        let context = ServerContext(
            store: store, hub: hub, sources: sources, reads: ReadPool(pool: pool), configuration: configuration, logger: logger)

        let serverChannel: NIOAsyncChannel<AcceptedConnection, Never>
        do {
            serverChannel = try await bind(configuration, store: store)
        } catch {
            await Self.close(store)
            try? await pool.shutdownGracefully()
            throw SocketFile.Error(description: "cannot listen on \(configuration.socketPath): \(error)")
        }
        let inode = SocketFile.inode(configuration.socketPath)
        chmod(configuration.socketPath, configuration.socketMode)
        logger.info(
            "replayd \(ReplayVersion.current) ready",
            metadata: [
                "socket": "\(configuration.socketPath)", "database": "\(configuration.databasePath)",
                "durability": "\(configuration.durability.rawValue)", "streams": "\(store.streams.count)",
                "max_connections": "\(configuration.maxConnections)", "fd_limit": "\(fileLimit)",
            ])

        sources.start()
        let stateDump = StateDump(logger: logger) { [connections] in
            let open = connections.withLock { $0.values.sorted { $0.id < $1.id } }
            return ["\(open.count) connections"] + open.map(\.stateDescription) + hub.all.map(\.stateDescription)
        }

        // Age limits apply to idle streams too.
        let expiry = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                if store.streams.contains(where: { $0.config.maxAge != nil }) {
                    try? await store.enforceRetention()
                }
            }
        }

        await withGracefulShutdownHandler {
            await serve(serverChannel, context: context)
        } onGracefulShutdown: {
            self.logger.info("shutting down: draining connections")
            serverChannel.channel.close(promise: nil)
            for connection in self.connections.withLock({ Array($0.values) }) { connection.drain() }
        }

        expiry.cancel()
        stateDump.stop()
        await sources.stopAll()
        await Self.close(store)
        try? await pool.shutdownGracefully()
        SocketFile.remove(configuration.socketPath, inode: inode)
        logger.info("replayd stopped")
    }

    private func serve(_ serverChannel: NIOAsyncChannel<AcceptedConnection, Never>, context: ServerContext) async {
        do {
            try await withThrowingDiscardingTaskGroup { group in
                try await serverChannel.executeThenClose { inbound in
                    for try await accepted in inbound {
                        let id = nextConnectionID.wrappingAdd(1, ordering: .relaxed).newValue
                        let connection = Connection(context: context, accepted: accepted, id: id)
                        let admitted = connections.withLock { connections -> Bool in
                            guard connections.count < context.configuration.maxConnections else { return false }
                            connections[id] = connection
                            return true
                        }
                        guard admitted else {
                            group.addTask { await Self.refuse(accepted.channel, ReplayError(
                                .tooManyConnections, "replayd has \(context.configuration.maxConnections) connections, its limit (--max-connections); retry later")) }
                            continue
                        }
                        group.addTask {
                            // Its place is given back before the socket closes, so a client
                            // that saw the close can count on it.
                            await connection.run { self.connections.withLock { _ = $0.removeValue(forKey: id) } }
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

    private func bind(_ configuration: ServerConfiguration, store: EventStore) async throws -> NIOAsyncChannel<AcceptedConnection, Never> {
        // Create the socket with exactly the configured mode (0600 unless widened): never
        // briefly open to others, and already final when the first client connects (a
        // chmod after bind left a moment where the socket accepted with the narrower mode).
        let previous = umask(~configuration.socketMode & 0o777)
        defer { umask(previous) }
        return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            // A client may send its commands and close its side (`socat` does at end of
            // input): it still gets every answer before the connection closes.
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .bind(unixDomainSocketPath: configuration.socketPath, cleanupExistingSocketFile: false) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let router = CommandRouter(store: store, maxOwed: configuration.maxPendingRepliesPerConnection)
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(CommandDecoder(maxLineLength: configuration.maxLineLength, maxPayload: configuration.maxPayload)),
                        router,
                    ])
                    let async = try NIOAsyncChannel<RoutedCommand, ByteBuffer>(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(backPressureStrategy: .init(lowWatermark: 64, highWatermark: 256)))
                    return AcceptedConnection(channel: async, replies: ReplyChannel(router))
                }
            }
    }

    /// Closes the store (it commits what is queued and checkpoints, which waits on the
    /// disk) on NIO's blocking-work pool, not the cooperative pool.
    private static func close(_ store: EventStore) async {
        _ = try? await NIOThreadPool.singleton.runIfActive { store.close() }
    }

    private static func makeParentFolder(of path: String) throws {
        let folder = (path as NSString).deletingLastPathComponent
        guard !folder.isEmpty else { return }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
}
