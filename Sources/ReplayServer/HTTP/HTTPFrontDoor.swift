import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOPosix
import ReplayStore
import ServiceLifecycle

/// The Durable Streams HTTP front door (`replayd --http HOST:PORT`): one more service of
/// the daemon's group, over the same store and the same hubs as the socket, so what one
/// protocol appends the other reads, live. Built on hummingbird 2, whose `Application` is
/// itself a swift-service-lifecycle service: at a graceful shutdown it stops accepting,
/// finishes the requests in flight, and live reads end at once (`ParkedReads`).
public struct HTTPFrontDoor: Service {
    let settings: HTTPSettings
    let endpoint: StreamEndpoint
    let metrics: MetricsEndpoint?
    let logger: Logger
    private let readThreads: NIOThreadPool
    /// The socket door's cap (`--max-connections`): the HTTP door's takes the descriptors it leaves.
    private let socketConnections: Int

    let sources: SourceRegistry
    let derivations: DerivationRegistry
    private let defaultCapacity: Int?
    /// Told once the door listens.
    private let ready: DaemonReadiness?

    init(
        settings: HTTPSettings, configuration: ServerConfiguration, store: EventStore, hubs: StreamHubs, sources: SourceRegistry,
        derivations: DerivationRegistry, ready: DaemonReadiness? = nil, tracer: EventTracer = .off, logger: Logger
    ) {
        self.settings = settings
        self.ready = ready
        self.sources = sources
        self.derivations = derivations
        defaultCapacity = configuration.defaultCapacity
        self.logger = logger
        socketConnections = configuration.maxConnections
        readThreads = NIOThreadPool(numberOfThreads: 2)
        var endpoint = StreamEndpoint(
            store: store, hubs: hubs, reads: ReadPool(pool: readThreads), settings: settings,
            maxPayload: configuration.maxPayload, leases: StreamLeases(sources: sources, derivations: derivations),
            programBudget: configuration.programBudget, logger: logger)
        endpoint.tracer = tracer
        self.endpoint = endpoint
        metrics = settings.metrics.map { MetricsEndpoint(registry: $0, hubs: hubs, store: store, derivations: derivations, sources: sources) }
    }

    public func run() async throws {
        try await withApplication { app in
            // A graceful shutdown ends the parked live reads at once (a long-poll is answered
            // as up to date, an SSE response ends), so that the requests in flight, which
            // hummingbird waits for, are not held by them.
            let parked = endpoint.parked
            try await withGracefulShutdownHandler {
                try await app.run()
            } onGracefulShutdown: {
                parked.shutDown()
            }
        }
    }

    /// The door's application, its subscriptions and read threads running while `body`
    /// uses it (runs it, or, in the tests, drives its responder), and stopped after, however
    /// `body` ends.
    func withApplication<T>(_ body: (Application<FrontDoorResponder>) async throws -> T) async throws -> T {
        readThreads.start()
        let webhooks = WebhookSender(timeout: settings.webhookTimeout)
        let subscriptions: Subscriptions
        do {
            let keys = try await SigningKeys.load(from: endpoint.store)
            subscriptions = try await Subscriptions(
                store: endpoint.store, reads: endpoint.reads, keys: keys, webhooks: webhooks,
                baseURL: settings.publicURL ?? "\(settings.scheme)://\(settings.host):\(settings.port)", tracer: endpoint.tracer,
                logger: logger)
        } catch {
            await webhooks.shutdown()
            try? await readThreads.shutdownGracefully()
            throw error
        }
        let feed = Self.follow(endpoint.store, into: subscriptions)
        defer { feed.cancel() }
        let requestMetrics = metrics.map { _ in RequestMetrics() }
        // A stream's plain POSTs are served on their event loop (`InlineAppendHandler`), on
        // HTTP/1.1 and on each HTTP/2 stream, unless token rules are checked: a token's
        // verification is the front door's. Both charge client rates to one table.
        let limiter = ClientRateLimiter(logger: logger)
        let result: Result<T, any Error>
        do {
            let (server, reloads) = try server(
                inline: InlineAppends(endpoint: endpoint, settings: settings, metrics: requestMetrics, limiter: limiter),
                eventStreams: ParkedEventStreams(
                    endpoint: endpoint, settings: settings, metrics: requestMetrics, loops: MultiThreadedEventLoopGroup.singleton))
            defer { reloads?.cancel() }
            let responder = FrontDoorResponder(
                router: router(subscriptions: subscriptions).buildResponder(), settings: settings, logger: logger, limiter: limiter,
                metrics: requestMetrics)
            let (logger, host, scheme, publicURL, ready) = (logger, settings.host, settings.scheme, settings.publicURL, ready)
            let app = Application(
                responder: responder,
                server: server,
                configuration: ApplicationConfiguration(address: .hostname(host, port: settings.port), serverName: nil),
                onServerRunning: { channel in
                    let port = channel.localAddress?.port ?? 0
                    // "https": TLS, with HTTP/2 and HTTP/1.1 by ALPN.
                    logger.info("\(scheme) listening on \(host):\(port)")
                    let shown = host.contains(":") ? "[\(host)]" : host
                    await subscriptions.resume(baseURL: publicURL ?? "\(scheme)://\(shown):\(port)")
                    ready?.listening(.http)
                },
                logger: logger)
            result = .success(try await body(app))
        } catch {
            result = .failure(error)
        }
        // However the door stops: no more alarms, the deliveries in flight ended and their
        // outcomes written, then the read threads.
        await subscriptions.stop()
        await webhooks.shutdown()
        await subscriptions.finishDeliveries()
        try? await readThreads.shutdownGracefully()
        return try result.get()
    }

    /// The door's own routes: the page, `/metrics` and the stream list.
    static func access(_ path: String) -> RequestAccess? {
        switch path {
        case "/": .open
        case "/metrics": .everywhere(.admin)
        case "/v1/streams": .anyToken
        default: nil
        }
    }

    /// Every route of the door but a stream's inline POSTs, which `InlineAppendHandler`
    /// answers before the router.
    private func router(subscriptions: Subscriptions) -> Router<FrontDoorContext> {
        let router = Router(context: FrontDoorContext.self)
        if let metrics { router.get("/metrics") { _, _ in metrics.respond() } }
        let endpoint = self.endpoint
        let list = StreamList(views: StreamViews(hubs: endpoint.hubs, store: endpoint.store, sources: sources, derivations: derivations))
        let tail = TailEndpoint(
            hubs: endpoint.hubs, store: endpoint.store, reads: endpoint.reads, keepAlive: settings.longPollTimeout, parked: endpoint.parked,
            leases: endpoint.leases)
        router.get("/") { _, _ in LiveViewPage.respond() }
        router.get("/v1/streams") { request, _ in try list.respond(request) }
        router.get("/v1/tail/**") { request, context in
            try tail.respond(request, path: context.parameters.get(String(Parameters.recursiveCaptureKey)) ?? "", closed: context.connectionClosed)
        }
        // Before the streams: their catch-all would take `__ds/…` for a stream's name.
        SubscriptionRoutes(subscriptions: subscriptions, webhookTargets: WebhookTargetRule(allowPrivate: settings.webhookAllowPrivate))
            .add(to: router)
        DerivationRoutes(derivations: derivations, defaultCapacity: defaultCapacity).add(to: router)
        endpoint.addRoutes(to: router.group(RouterPath(StreamEndpoint.prefix)))
        return router
    }

    /// The listener: its connection budget and request-head deadline, the inline appends,
    /// and TLS where configured (with the task that reloads its certificate on SIGHUP).
    private func server(inline: InlineAppends, eventStreams: ParkedEventStreams) throws -> (HTTPServerBuilder, reloads: Task<Void, Never>?) {
        // With TLS: HTTP/2 and HTTP/1.1 by ALPN on the one port (a browser opens at most six
        // HTTP/1.1 connections per origin, so a page with more live streams needs HTTP/2),
        // and nothing in plain text. A certificate renewed on disk is taken on SIGHUP.
        let budget = HTTPConnectionBudget(
            limit: HTTPConnectionBudget.limit(
                configured: settings.maxConnections, descriptors: FileLimits.current, socketConnections: socketConnections),
            logger: logger)
        let headerTimeout = TimeAmount(settings.headerTimeout)
        let inlineAppends = settings.tokenKeys == nil
        let handlers: @Sendable () -> [any RemovableChannelHandler] = {
            [RequestHeadDeadline(timeout: headerTimeout), EventStreamHangUp()] + (inlineAppends ? [InlineAppendHandler(inline)] : [])
        }
        logger.info("http: at most \(budget.limit) connections, request heads within \(settings.headerTimeout)")
        guard let tls = settings.tls else {
            let eventStreams = eventStreams.isOn ? eventStreams : nil
            let server = HTTPServerBuilder { responder in
                GuardedChildChannel(
                    inner: HTTP1Door(
                        responder: responder, additionalChannelHandlers: handlers, eventStreams: eventStreams,
                        framedAppends: inlineAppends ? inline : nil),
                    budget: budget)
            }
            return (server, nil)
        }
        let streams = HTTP1Channel.Configuration(additionalChannelHandlers: handlers())
        let configuration = try tls.configuration()
        let http2 = HTTP2UpgradeChannel.Configuration(idleTimeout: settings.idleTimeout, streamConfiguration: streams)
        let server = HTTPServerBuilder { responder in
            GuardedChildChannel(
                inner: try HTTP2UpgradeChannel(tlsConfiguration: configuration, configuration: http2, responder: responder), budget: budget,
                handshakeTimeout: headerTimeout)
        }
        return (server, Self.reloadOnHangup(tls, logger: logger))
    }

    /// Reads the certificate and key again on each SIGHUP; a bad file is logged, and the
    /// pair served before stays.
    private static func reloadOnHangup(_ tls: TLSCertificates, logger: Logger) -> Task<Void, Never> {
        signal(SIGHUP, SIG_IGN)
        let (hangups, continuation) = AsyncStream.makeStream(of: Void.self)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler { continuation.yield() }
        source.resume()
        return Task {
            for await _ in hangups {
                do {
                    try tls.reload()
                    logger.notice("SIGHUP: TLS certificate and key read again from \(tls.paths.certificate) and \(tls.paths.key)")
                } catch {
                    logger.error("SIGHUP: the TLS certificate was not reloaded, the one before stays: \(error)")
                }
            }
            source.cancel()
        }
    }

    /// Tells the subscriptions of every commit that appended to a stream, in commit order.
    /// The listener runs on the writer's thread and only hands the names on.
    private static func follow(_ store: EventStore, into subscriptions: Subscriptions) -> Task<Void, Never> {
        let (names, continuation) = AsyncStream.makeStream(of: [String].self)
        store.onCommit { batch in
            guard subscriptions.watching.load(ordering: .relaxed) else { return }
            let appended = batch.changes.compactMap { name, change in change.appended.isEmpty ? nil : name }
            if !appended.isEmpty { continuation.yield(appended) }
        }
        return Task {
            for await batch in names {
                for name in batch.sorted() { await subscriptions.appended(to: name) }
            }
        }
    }
}
