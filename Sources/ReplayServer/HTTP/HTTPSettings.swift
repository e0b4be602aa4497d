import Prometheus

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
    /// How long one SSE response lasts before the server ends it and the client reconnects
    /// from its last offset (Durable Streams PROTOCOL.md §10.2: about a minute, so caches can collapse).
    public var sseDuration: Duration = .seconds(60)
    /// The registry the process's metrics backend writes to, served at `GET /metrics`;
    /// `nil`: no metrics endpoint.
    public var metrics: PrometheusCollectorRegistry?

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
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
