import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import ReplayAuth
import ReplayProtocol
import ReplayServer
import ReplayStore
import ServiceLifecycle

/// `replayd`: parses its arguments and runs the server until SIGTERM or SIGINT.
@main
struct Replayd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replayd",
        abstract: "Serve persistent, replayable event streams over a Unix-domain socket.",
        discussion: """
            With no flags, replayd listens on $REPLAY_SOCKET, else $XDG_RUNTIME_DIR/replayd.sock, \
            else /tmp/replayd-$UID.sock, and stores streams in $REPLAY_DB, else \
            $XDG_DATA_HOME/replay/replay.sqlite (~/.local/share/replay/replay.sqlite).

            Exit status: 0 after a clean shutdown (SIGTERM or SIGINT); 1 if it could not start \
            (socket in use, database unusable); 64 for bad arguments.
            """,
        version: ReplayVersion.current)

    @Option(help: "The Unix socket to listen on.")
    var socket: String = ServerConfiguration.defaultSocketPath

    @Option(help: "Where streams are stored: a SQLite file (created if missing), or a postgres:// URL that several daemons share.")
    var db: String = ServerConfiguration.defaultDatabasePath

    @Option(help: "full: every commit is fsynced (survives power loss). normal: survives a crash of replayd only.")
    var sync: Durability = .full

    @Option(name: .customLong("default-capacity"), help: "Capacity of streams created by their first use: a count, or 'unlimited'.")
    var defaultCapacity: CreateOptions.Capacity = .count(ServerConfiguration.Defaults.capacity)

    @Flag(name: .customLong("no-auto-create"), help: "Refuse PUB and SUB to streams that were not created first.")
    var noAutoCreate = false

    @Option(name: .customLong("max-payload"), help: "Largest event payload accepted, in bytes.")
    var maxPayload: Int = ProtocolLimits.maxPayload

    @Option(name: .customLong("max-line"), help: "Longest control line accepted, in bytes.")
    var maxLine: Int = ProtocolLimits.maxLineLength

    @Option(name: .customLong("max-subscriptions"), help: "Subscriptions one connection may hold.")
    var maxSubscriptions: Int = ServerConfiguration.Defaults.maxSubscriptionsPerConnection

    @Option(name: .customLong("socket-mode"), help: "Permission bits of the socket file, in octal (0660 shares it with the group).")
    var socketMode: String = "0600"

    @Option(name: .customLong("max-connections"), help: "Connections served at once; more get too_many_connections.")
    var maxConnections: Int = ServerConfiguration.Defaults.maxConnections

    @Option(name: .customLong("allow-uid"), help: ArgumentHelp("Only these users may connect (checked with SO_PEERCRED); repeatable.", valueName: "uid"))
    var allowUID: [UInt32] = []

    @Option(name: .customLong("allow-gid"), help: ArgumentHelp("Only members of these groups may connect; repeatable.", valueName: "gid"))
    var allowGID: [UInt32] = []

    @Flag(name: .customLong("no-socket-sources"), help: "Refuse CREATE with a source over the socket (sources then come only from --config).")
    var noSocketSources = false

    @Option(help: ArgumentHelp("A JSON file of stream declarations (with sources) to create at start.", valueName: "path"))
    var config: String?

    @Option(help: ArgumentHelp("Also serve the Durable Streams HTTP protocol on this address (127.0.0.1:8787; port 0 picks one).", valueName: "host:port"))
    var http: String?

    @Option(
        name: .customLong("http-token"), help: ArgumentHelp("Require Authorization: Bearer <token> for HTTP writes ($REPLAY_HTTP_TOKEN).", valueName: "token"))
    var httpToken: String?

    @Flag(name: .customLong("http-token-reads"), help: "Require the token for HTTP reads too (GET, HEAD, /metrics, the page).")
    var httpTokenReads = false

    @Option(
        name: .customLong("long-poll-timeout"),
        help: "Seconds an HTTP long-poll waits for new events before 204 No Content (0.5 is allowed); also how often a quiet SSE response gets a control event."
    )
    var longPollTimeout: Double = 15

    @Option(
        name: .customLong("webhook-timeout"),
        help: "Seconds a webhook receiver has to answer a delivery before it counts as failed and is retried."
    )
    var webhookTimeout: Double = 10

    @Option(
        name: .customLong("sse-duration"),
        help:
            "Seconds after which the server ends an SSE response and the client reconnects (about 60 behind a CDN that collapses readers); 0: when the client leaves."
    )
    var sseDuration: Double = 0

    @Option(
        name: .customLong("http-cors-origin"),
        help: ArgumentHelp(
            "An origin whose pages may call the HTTP door from a browser (https://app.example), or '*' for any; repeatable. Default: none.", valueName: "origin"
        ))
    var httpCORSOrigin: [String] = []

    @Option(name: .customLong("http-capacity"), help: "Capacity of streams created by HTTP PUT without Replay-Max-Events: a count, or 'unlimited'.")
    var httpCapacity: CreateOptions.Capacity = .unlimited

    @Option(
        name: .customLong("http-max-connections"),
        help: "HTTP connections open at most (never more than half the descriptors left after a reserve); beyond, new ones are closed at once.")
    var httpMaxConnections = 10_000

    @Option(
        name: .customLong("http-header-timeout"),
        help: "Seconds an HTTP connection has to send its next request head before it is closed (against clients that send slowly).")
    var httpHeaderTimeout: Double = 10

    @Option(
        name: .customLong("rate-limit-requests"),
        help: ArgumentHelp(
            "Requests (HTTP) and commands (socket) each client may make, such as 100/s or 6000/min; over it, 429 or -ERR rate_limited. A client is a token's subject or an address over HTTP, a connection on the socket. Default: unlimited.",
            valueName: "rate"))
    var rateLimitRequests: RateLimit?

    @Option(
        name: .customLong("rate-limit-bytes"),
        help: ArgumentHelp(
            "Bytes of events each client may send, such as 1M/s (k, M, G: thousands); as --rate-limit-requests. Default: unlimited.", valueName: "rate"))
    var rateLimitBytes: RateLimit?

    @Option(
        name: .customLong("token-max-streams"),
        help: ArgumentHelp(
            "Streams one token (by subject) may have created and not deleted, over HTTP; a token's limits claim overrides it. Default: unlimited.",
            valueName: "count"))
    var tokenMaxStreams: Int?

    @Option(
        name: .customLong("auth-keys"),
        help: ArgumentHelp(
            "Keys scoped tokens (JWT, HS256 or EdDSA) are verified with: every HTTP request then needs a token whose scopes allow it. docs/SECURITY.md.",
            valueName: "file"))
    var authKeys: String?

    @Option(
        name: .customLong("tls-cert"),
        help: ArgumentHelp(
            "The HTTP door's certificate chain (PEM): HTTPS, with HTTP/2 and HTTP/1.1, and no plain HTTP. SIGHUP reads it again.", valueName: "file"))
    var tlsCert: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The private key of --tls-cert (PEM).", valueName: "file"))
    var tlsKey: String?

    @Option(
        name: .customLong("tls-client-ca"),
        help: ArgumentHelp("Mutual TLS: clients must present a certificate this CA (PEM) signed.", valueName: "file"))
    var tlsClientCA: String?

    @Option(
        name: .customLong("http-public-url"),
        help: ArgumentHelp(
            "The URL clients reach the HTTP door at (https://streams.example), for the callback and key URLs subscriptions hand out. Default: http://HOST:PORT as bound.",
            valueName: "url"))
    var httpPublicURL: String?

    @Option(
        name: .customLong("checkpoint-every"),
        help: ArgumentHelp(
            "Sign a checkpoint (stream, seq, chain hash, time) of every stream whose chain moved, each time this many events were appended, into the stream replay/checkpoints that anyone may read.",
            valueName: "events"))
    var checkpointEvery: Int?

    @Option(
        name: .customLong("checkpoint-interval"),
        help: ArgumentHelp(
            "Sign checkpoints of the streams that moved at least this often (seconds); with --checkpoint-every, whichever comes first.", valueName: "seconds"))
    var checkpointInterval: Double?

    @Flag(
        name: .customLong("verify-on-start"),
        help:
            "Recompute every stream's hash chain before serving; a broken one is logged as an error (and its bad event is never served either way). Reads every event: seconds per GB."
    )
    var verifyOnStart = false

    @Flag(
        name: .customLong("webhook-allow-private"),
        help:
            "Let webhooks target private, loopback and link-local addresses over https and http. Anyone who may create a subscription can then make replayd send requests inside its network: only on a trusted one."
    )
    var webhookAllowPrivate = false

    @Option(
        name: .customLong("jq-time-limit"),
        help: ArgumentHelp(
            "CPU seconds a jq program (a derivation's, a reader's filter) may run on one event; past it the event is a runtime error.", valueName: "seconds"))
    var jqTimeLimit: Double = 0.25

    @Option(
        name: .customLong("jq-memory-limit"),
        help: ArgumentHelp("Megabytes a jq program may allocate on one event; past it the event is a runtime error.", valueName: "MB"))
    var jqMemoryLimit: Int = 256

    @Option(
        name: .customLong("otlp-endpoint"),
        help: ArgumentHelp(
            "Export spans of traced events (publish, deliver, hand-out, settle, webhook) over OTLP/HTTP to this collector, such as http://127.0.0.1:4318.",
            valueName: "url"))
    var otlpEndpoint: String?

    @Option(name: .customLong("otlp-protocol"), help: "OTLP/HTTP's encoding: http/protobuf or http/json.")
    var otlpProtocol: TracingSettings.Encoding = .protobuf

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: Logger.Level = .info

    func validate() throws {
        guard maxPayload > 0 else { throw ValidationError("--max-payload must be more than 0") }
        guard maxLine >= 64 else { throw ValidationError("--max-line must be at least 64") }
        guard maxSubscriptions > 0 else { throw ValidationError("--max-subscriptions must be more than 0") }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be more than 0") }
        if let http, HTTPSettings(address: http) == nil {
            throw ValidationError("--http takes HOST:PORT, such as 127.0.0.1:8787 or [::1]:8787")
        }
        if httpTokenReads, httpToken == nil, ProcessInfo.processInfo.environment["REPLAY_HTTP_TOKEN"] == nil {
            throw ValidationError("--http-token-reads needs --http-token")
        }
        guard longPollTimeout >= 0.01, longPollTimeout <= 3600 else {
            throw ValidationError("--long-poll-timeout takes seconds from 0.01 to 3600")
        }
        guard webhookTimeout >= 0.1, webhookTimeout <= 3600 else {
            throw ValidationError("--webhook-timeout takes seconds from 0.1 to 3600")
        }
        guard sseDuration == 0 || (sseDuration >= 1 && sseDuration <= 86_400) else {
            throw ValidationError("--sse-duration takes 0 (until the client leaves) or seconds from 1 to 86400")
        }
        for origin in httpCORSOrigin where origin != "*" {
            guard let url = URL(string: origin), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.path.isEmpty, url.query == nil else {
                throw ValidationError("--http-cors-origin takes an origin, such as https://app.example or http://localhost:3000, or '*'")
            }
        }
        guard httpMaxConnections > 0 else { throw ValidationError("--http-max-connections must be more than 0") }
        guard httpHeaderTimeout >= 0.1, httpHeaderTimeout <= 3600 else { throw ValidationError("--http-header-timeout takes seconds from 0.1 to 3600") }
        guard jqTimeLimit >= 0.001, jqTimeLimit <= 3600 else { throw ValidationError("--jq-time-limit takes seconds from 0.001 to 3600") }
        guard jqMemoryLimit >= 1 else { throw ValidationError("--jq-memory-limit takes megabytes, 1 or more") }
        if let tokenMaxStreams, tokenMaxStreams < 0 { throw ValidationError("--token-max-streams takes a count, 0 or more") }
        if tokenMaxStreams != nil, authKeys == nil { throw ValidationError("--token-max-streams is for scoped tokens: give --auth-keys too") }
        if authKeys != nil, http == nil { throw ValidationError("--auth-keys is for the HTTP door: give --http HOST:PORT too") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        if tlsClientCA != nil, tlsCert == nil { throw ValidationError("--tls-client-ca needs --tls-cert and --tls-key") }
        if tlsCert != nil, http == nil { throw ValidationError("--tls-cert is for the HTTP door: give --http HOST:PORT too") }
        if let httpPublicURL {
            guard let url = URL(string: httpPublicURL), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.query == nil,
                !httpPublicURL.hasSuffix("/")
            else {
                throw ValidationError("--http-public-url takes a URL without a trailing slash, such as https://streams.example or http://10.0.0.5:8787")
            }
        }
        if let otlpEndpoint {
            guard let url = URL(string: otlpEndpoint), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.query == nil else {
                throw ValidationError("--otlp-endpoint takes an http or https URL, such as http://127.0.0.1:4318")
            }
        }
        guard mode_t(socketMode, radix: 8).map({ $0 <= 0o777 }) == true else {
            throw ValidationError("--socket-mode takes octal permission bits, such as 0600 or 0660")
        }
    }

    func run() async throws {
        let level = logLevel
        // Under systemd, each line carries its priority for journald.
        let journal = JournalLogHandler.stderrIsJournal()
        LoggingSystem.bootstrap { label in
            guard !journal else {
                var handler = JournalLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "replayd")
        var configuration: ServerConfiguration
        do {
            configuration = try serverConfiguration(tokenKeys: try await tokenKeys())
        } catch {
            // A key or certificate file that cannot be read stops the start, saying why.
            FileHandle.standardError.write(Data("replayd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        configuration.http?.metrics = Self.bootstrapMetrics()
        // What systemd passed and asks: the listening socket (socket activation), and where
        // to tell it the daemon's state. Taken here, not with the flags: they are this
        // process's, and removed from its environment once read.
        do {
            configuration.inheritedSocket = try InheritedSocket.take()
        } catch {
            FileHandle.standardError.write(Data("replayd: \(error)\n".utf8))
            throw ExitCode(1)
        }
        configuration.serviceManager = ServiceManagerLink.take()
        configuration.allocator = MemoryAllocator.describe()

        do {
            let server = try await ReplayServer(configuration: configuration, logger: logger)
            // Every service ends the group when it ends, cleanly or not: the others then
            // stop gracefully, in reverse order, and a failure is rethrown as thrown.
            let group = ServiceGroup(
                configuration: .init(
                    services: server.services.map {
                        .init(service: $0, successTerminationBehavior: .gracefullyShutdownGroup, failureTerminationBehavior: .gracefullyShutdownGroup)
                    },
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger))
            try await group.run()
        } catch {
            FileHandle.standardError.write(Data("replayd: \(Self.explain(error))\n".utf8))
            throw ExitCode(1)
        }
        logger.info("replayd stopped")
    }

    /// The daemon's configuration, from its flags and the token keys they name: nothing
    /// global is touched (the logging and metrics systems are `run`'s), so the tests start
    /// the HTTP door in their own process from the same flags (`withDoor`).
    ///
    /// Not `async` itself: the release compiler (Swift 6.3.1) crashed splitting this as a
    /// coroutine ("emitSetAndGetSwiftErrorValueAround"), so the one wait, reading the
    /// key file, is `tokenKeys()`'s.
    func serverConfiguration(tokenKeys: TokenKeys?) throws -> ServerConfiguration {
        var configuration = ServerConfiguration(socketPath: socket, databasePath: db, durability: sync)
        configuration.defaultCapacity = defaultCapacity.limit
        configuration.autoCreate = !noAutoCreate
        configuration.verifyOnStart = verifyOnStart
        if checkpointEvery != nil || checkpointInterval != nil {
            if let checkpointEvery, checkpointEvery < 1 { throw ValidationError("--checkpoint-every takes a number of events, 1 or more") }
            if let checkpointInterval, !(checkpointInterval > 0) { throw ValidationError("--checkpoint-interval takes seconds above 0") }
            configuration.checkpoints = CheckpointSettings(
                events: checkpointEvery, interval: checkpointInterval.map { .milliseconds(Int(($0 * 1000).rounded(.up))) })
        }
        configuration.maxPayload = maxPayload
        configuration.maxLineLength = maxLine
        configuration.maxSubscriptionsPerConnection = maxSubscriptions
        configuration.socketMode = mode_t(socketMode, radix: 8)!
        configuration.maxConnections = maxConnections
        configuration.access = AccessPolicy(allowedUIDs: Set(allowUID), allowedGIDs: Set(allowGID))
        configuration.allowSocketSources = !noSocketSources
        configuration.declarationsPath = config
        configuration.programBudget.timeLimit = .milliseconds(Int64((jqTimeLimit * 1000).rounded()))
        configuration.programBudget.memoryLimit = jqMemoryLimit << 20
        configuration.connectionLimits = ClientLimits(requests: rateLimitRequests, bytes: rateLimitBytes)
        if let address = http, var settings = HTTPSettings(address: address) {
            settings.token = httpToken ?? ProcessInfo.processInfo.environment["REPLAY_HTTP_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            settings.tokenForReads = httpTokenReads
            settings.longPollTimeout = .milliseconds(Int((longPollTimeout * 1000).rounded()))
            settings.webhookTimeout = .milliseconds(Int64((webhookTimeout * 1000).rounded()))
            settings.sseDuration = sseDuration == 0 ? nil : .milliseconds(Int((sseDuration * 1000).rounded()))
            settings.allowedOrigins = httpCORSOrigin
            settings.createdCapacity = httpCapacity.limit
            settings.publicURL = httpPublicURL
            settings.maxConnections = httpMaxConnections
            settings.headerTimeout = .milliseconds(Int((httpHeaderTimeout * 1000).rounded()))
            settings.clientLimits = ClientLimits(requests: rateLimitRequests, bytes: rateLimitBytes, streams: tokenMaxStreams)
            settings.tokenKeys = tokenKeys
            if let tlsCert, let tlsKey { settings.tls = try TLSCertificates(.init(certificate: tlsCert, key: tlsKey, clientCA: tlsClientCA)) }
            settings.webhookAllowPrivate = webhookAllowPrivate
            configuration.http = settings
        }
        if let otlpEndpoint {
            var tracing = TracingSettings(endpoint: otlpEndpoint)
            tracing.encoding = otlpProtocol
            configuration.tracing = tracing
        }
        return configuration
    }

    /// The token keys `--auth-keys` names, if it names a file.
    func tokenKeys() async throws -> TokenKeys? {
        guard let authKeys else { return nil }
        return try await TokenKeys.load(authKeys)
    }
}

extension Replayd {
    /// The error, with the flag that chose the database where it is about the database
    /// itself (the store speaks of storage only).
    static func explain(_ error: any Error) -> String {
        guard let error = error as? StoreError else { return "\(error)" }
        switch error {
        case .notADatabase, .readOnly, .locked, .newerSchema: return "\(error) (--db)"
        default: return "\(error)"
        }
    }

    /// Routes the process's swift-metrics to a Prometheus registry, which `GET /metrics`
    /// serves. Names take Prometheus's form (hummingbird's dotted labels become underscored).
    static func bootstrapMetrics() -> PrometheusCollectorRegistry {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.nameAndLabelSanitizer = { name, labels in
            (name.replacingOccurrences(of: ".", with: "_"), labels.map { ($0.0.replacingOccurrences(of: ".", with: "_"), $0.1) })
        }
        // Commits take from a tenth of a millisecond (a small batch, fsync off) to about a second.
        factory.durationHistogramBuckets["replay_commit_duration_seconds"] = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .seconds(1),
        ]
        // A WAL checkpoint is paced to stay near 2.5 ms (`CheckpointPacing`).
        factory.durationHistogramBuckets["replay_wal_checkpoint_duration_seconds"] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(3),
            .milliseconds(5), .microseconds(7_500), .milliseconds(10), .milliseconds(25), .milliseconds(100),
        ]
        factory.valueHistogramBuckets["replay_commit_batch_requests"] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
        MetricsSystem.bootstrap(factory)
        ReplayServer.registerMetrics()
        return registry
    }
}

extension Durability: ExpressibleByArgument {}

extension RateLimit: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

extension CreateOptions.Capacity: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension TracingSettings.Encoding: ExpressibleByArgument {}
