import Foundation
import ReplayAuth
import ReplayDerive
import ReplayProtocol
import ReplayStore

/// Everything `replayd` can be told. Defaults are what runs with no flags at all.
public struct ServerConfiguration: Sendable {
    public var socketPath: String
    /// The listening socket systemd passed (socket activation): served instead of binding
    /// `socketPath`, and never removed, being systemd's.
    public var inheritedSocket: InheritedSocket?
    /// Where `sd_notify` messages go (`NOTIFY_SOCKET`), and the watchdog's interval
    /// (`WATCHDOG_USEC`), when a service manager asks for them.
    public var serviceManager: ServiceManagerLink?
    /// The memory allocator serving the process, as the executable found it (replayd links
    /// jemalloc): said in the start-up line, as Redis's INFO says `mem_allocator`.
    public var allocator: String?
    public var databasePath: String
    public var durability: Durability
    /// The capacity of streams created by their first PUB or SUB; `nil`: unlimited.
    public var defaultCapacity: Int? = Defaults.capacity
    /// Whether PUB/SUB to an unknown stream creates it (`--no-auto-create` turns it off).
    public var autoCreate = true
    public var maxPayload = ProtocolLimits.maxPayload
    public var maxLineLength = ProtocolLimits.maxLineLength
    public var maxSubscriptionsPerConnection = Defaults.maxSubscriptionsPerConnection
    /// Replies a connection may have outstanding before the server stops reading from it.
    public var maxPendingRepliesPerConnection = Defaults.maxPendingRepliesPerConnection
    /// The socket file's permission bits (0600 by default: the daemon's user only).
    public var socketMode: mode_t = 0o600
    /// Recent events kept in memory per stream for live delivery (count and bytes).
    public var tailEvents = 4096
    public var tailBytes = 4 << 20
    /// Whether CREATE over the socket may give a stream a source (a command the daemon
    /// runs as its own user).
    public var allowSocketSources: Bool = true
    /// Connections accepted at once; beyond, a client gets `too_many_connections`.
    public var maxConnections: Int = Defaults.maxConnections
    /// Who may connect, beyond the socket file's permissions.
    public var access = AccessPolicy()
    /// A JSON file of stream declarations (with sources) created at start.
    public var declarationsPath: String?
    /// The request and byte rates each socket connection may use (`--rate-limit-requests`,
    /// `--rate-limit-bytes`); over them, a command gets `-ERR rate_limited` and is not
    /// run. Unlimited by default. (The HTTP door's are its settings', per client.)
    public var connectionLimits = ClientLimits.none
    /// The socket's access rules, from the `access` key of the `--config` file.
    var socketRules: SocketRules?
    /// The Durable Streams HTTP front door; `nil` (the default): no HTTP.
    public var http: HTTPSettings?
    /// Where spans go (`--otlp-endpoint`); `nil`: no tracing.
    public var tracing: TracingSettings?
    /// Recompute every stream's hash chain before serving (`StartupVerification`).
    public var verifyOnStart = false
    /// When to sign checkpoints of the streams' chains (`CheckpointService`); `nil`: never.
    public var checkpoints: CheckpointSettings?
    /// What a jq program (a derivation's, a reader's filter) may spend on one event
    /// (`--jq-time-limit`, `--jq-memory-limit`).
    public var programBudget = JQProgram.Budget()

    /// The daemon's defaults, in one place (`replayd`'s flags start from them too).
    public enum Defaults {
        public static let capacity = 10_000
        public static let maxSubscriptionsPerConnection = 1024
        public static let maxPendingRepliesPerConnection = 1024
        public static let maxConnections = 10_000
    }

    public init(
        socketPath: String = ServerConfiguration.defaultSocketPath,
        databasePath: String = ServerConfiguration.defaultDatabasePath,
        durability: Durability = .full
    ) {
        self.socketPath = socketPath
        self.databasePath = databasePath
        self.durability = durability
    }

    /// `$REPLAY_SOCKET`, else `$XDG_RUNTIME_DIR/replayd.sock`, else `/tmp/replayd-$UID.sock`.
    public static var defaultSocketPath: String { ReplayDefaults.socketPath }

    /// `$REPLAY_DB`, else `$XDG_DATA_HOME/replay/replay.sqlite`, else
    /// `~/.local/share/replay/replay.sqlite` (the folder is created if needed).
    public static var defaultDatabasePath: String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["REPLAY_DB"], !path.isEmpty { return path }
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() + "/.local/share")
        return data + "/replay/replay.sqlite"
    }
}
