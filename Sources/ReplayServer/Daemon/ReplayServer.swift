import Foundation
import Logging
import ReplayStore
import ServiceLifecycle

/// The daemon, assembled: the socket path checked, the store opened (O(streams)), the
/// operator's declared streams created, and the services that run it all.
///
/// ```swift
/// let server = try await ReplayServer(configuration: configuration, logger: logger)
/// try await ServiceGroup(services: server.services, gracefulShutdownSignals: [.sigterm], logger: logger).run()
/// ```
///
/// `services` is in dependency order: a `ServiceGroup` starts them together and, at a
/// graceful shutdown, stops them one by one from the last: the HTTP front door if any (live
/// reads end, requests in flight finish), then the socket listener (no
/// new connections; each connection answers what it read and closes), then retention,
/// then the derivations (a step not committed is computed again at the next start), then
/// the sources (stopped, not ended), and the store last (it commits what is queued,
/// checkpoints and closes). Under a service manager (`NOTIFY_SOCKET`), its notifier is
/// after them all, so stopped first: it says STOPPING=1 as the drain begins.
public struct ReplayServer: Sendable {
    public let services: [any Service]

    public init(configuration: ServerConfiguration, logger: Logger) async throws {
        var configuration = configuration
        // Before the database: a second daemon is refused on its socket, and must not even
        // try the first one's database lock.
        // A socket systemd passed is systemd's: nothing to check or remove.
        if let inherited = configuration.inheritedSocket {
            configuration.socketPath = inherited.path
        } else {
            try SocketFile.prepare(configuration.socketPath)
        }
        // Spans go out through their own service, first in the list, so stopped last: the
        // spans of the drain are exported too.
        let tracing = try configuration.tracing?.makeTracer()
        let tracer = EventTracer(tracer: tracing?.tracer)
        let store = try StoreService(configuration: configuration)
        if let path = configuration.declarationsPath {
            do {
                let declarations = try StreamDeclarations.load(path)
                configuration.socketRules = try declarations.socketRules(in: path)
                try await declarations.apply(to: store.store, defaultCapacity: configuration.defaultCapacity)
            } catch {
                await store.close()
                throw error
            }
        }
        if configuration.verifyOnStart { _ = await StartupVerification.run(store.store, logger: logger) }
        let hubs = StreamHubs(store: store.store, tailEvents: configuration.tailEvents, tailBytes: configuration.tailBytes)
        let sources = SourceRegistry(store: store.store, logger: logger)
        let derivations = DerivationRegistry(store: store.store, budget: configuration.programBudget, logger: logger)
        let ready = DaemonReadiness(doors: configuration.http == nil ? [.socket] : [.socket, .http])
        let listener = SocketListener(
            configuration: configuration, store: store.store, hubs: hubs, sources: sources, derivations: derivations, ready: ready,
            tracer: tracer, logger: logger)
        var services: [any Service] =
            (tracing.map { [$0.service] } ?? []) + [
                store, sources, derivations, RetentionService(store: store.store), CompactionService(store: store.store, logger: logger), listener,
            ]
        if let checkpoints = configuration.checkpoints {
            services.append(CheckpointService(store: store.store, settings: checkpoints, logger: logger))
        }
        if let http = configuration.http {
            services.append(
                HTTPFrontDoor(
                    settings: http, configuration: configuration, store: store.store, hubs: hubs, sources: sources, derivations: derivations,
                    ready: ready, tracer: tracer, logger: logger))
        }
        // Last, so that a graceful shutdown stops it first: systemd hears STOPPING=1 as the
        // drain begins.
        if let link = configuration.serviceManager {
            let store = store.store
            services.append(
                ServiceManagerNotifier(
                    link: link, store: store, ready: ready,
                    status: { "\(store.streams.count) streams, \(listener.connectionCount) socket connections" }, logger: logger))
        }
        self.services = services
    }
}
