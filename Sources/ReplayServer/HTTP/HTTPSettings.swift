import NIOCore
import Prometheus
import ReplayAuth

/// The Durable Streams HTTP front door's settings (`replayd --http HOST:PORT` and friends).
public struct HTTPSettings: Sendable {
    public var host: String
    /// 0 picks a free port (the log and `boundPort` say which).
    public var port: Int
    /// With a token, writes (PUT, POST, DELETE) need `Authorization: Bearer <token>`.
    public var token: String?
    /// Reads (GET, HEAD, /metrics, the page) need the token too.
    public var tokenForReads = false
    /// How long a long-poll waits for new events before `204 No Content`.
    public var longPollTimeout: Duration = .seconds(15)
    /// How long a webhook receiver has to answer a delivery (`--webhook-timeout`).
    public var webhookTimeout: TimeAmount = .seconds(10)
    /// How long one SSE response lasts before the server ends it and the client reconnects
    /// from its last offset; `nil`: until the client leaves. The protocol (§5.8) suggests
    /// about a minute where a CDN collapses readers onto shared requests; without one, the
    /// reconnections only cost. A quiet SSE response gets a `control` event every
    /// `longPollTimeout`, so proxies that cut idle connections leave it open.
    public var sseDuration: Duration?
    /// The origins whose pages may call this door from a browser (CORS): exact origins
    /// (`https://app.example`), or `*` for any. Empty: none but this door's own pages.
    public var allowedOrigins: [String] = []
    /// The capacity of a stream created by HTTP PUT that names none (`Replay-Max-Events`);
    /// `nil` keeps every event, as a Durable Streams client expects.
    public var createdCapacity: Int?
    /// The URL clients reach this door at (`--http-public-url`), for the URLs the
    /// subscription API hands out (webhook callbacks, `jwks_url`); `nil`: `http://HOST:PORT`
    /// (`https://` with TLS) as bound, right when clients connect to that address directly.
    public var publicURL: String?
    /// Webhooks may target private and loopback addresses over https and http
    /// (`--webhook-allow-private`): only for a daemon on a trusted network (see
    /// `WebhookTargetRule`).
    public var webhookAllowPrivate = false
    /// At most this many HTTP connections (`--http-max-connections`), and never more than
    /// half the descriptors left after a reserve (`HTTPConnectionBudget`).
    public var maxConnections = 10_000
    /// How long a connection may take to send its next request head (`--http-header-timeout`).
    public var headerTimeout: Duration = .seconds(10)
    /// How long an HTTP/2 connection with no streams stays open.
    public var idleTimeout: Duration = .seconds(120)
    /// Every client's request and byte rates (`--rate-limit-requests`, `--rate-limit-bytes`)
    /// and the streams a token may have created (`--token-max-streams`); a token's own
    /// `limits` claim overrides them. A client is a token's subject, or else a remote
    /// address. Unlimited by default: a single user never meets them.
    public var clientLimits = ClientLimits.none
    /// The keys scoped tokens are verified with (`--auth-keys`): every request then needs a
    /// token whose scopes allow it (docs/SECURITY.md); `nil`: only `token`, if set.
    public var tokenKeys: TokenKeys?
    /// The certificate and key the door serves TLS with (`--tls-cert`, `--tls-key`), and
    /// HTTP/2 besides HTTP/1.1 (ALPN); `nil`: plain HTTP/1.1.
    public var tls: TLSCertificates?
    var scheme: String { tls == nil ? "http" : "https" }
    /// The registry the process's metrics backend writes to, served at `GET /metrics`;
    /// `nil`: no metrics endpoint.
    public var metrics: PrometheusCollectorRegistry?

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// The `Access-Control-Allow-Origin` a request from `origin` gets; `nil`: none.
    func corsValue(for origin: String) -> String? {
        if allowedOrigins.contains("*") { return "*" }
        return allowedOrigins.contains(origin) ? origin : nil
    }

    /// Parses `HOST:PORT` (`[::1]:8080` for IPv6); `nil` if it is not one.
    public init?(address: String) {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
            (0...65535).contains(port)
        else { return nil }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.init(host: host, port: port)
    }
}
