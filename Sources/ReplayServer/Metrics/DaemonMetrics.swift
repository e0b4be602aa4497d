import Metrics
import ReplayStore

/// The daemon's metrics, through swift-metrics (no-ops until the process bootstraps a
/// backend; `replayd` bootstraps Prometheus, which `GET /metrics` emits). Gauges of things
/// that come and go are meters moved on each change; per-stream figures are read at
/// scrape time (`MetricsEndpoint`), so no write path pays for them.
enum DaemonMetrics {
    static let eventsDelivered = Counter(label: "replay_events_delivered_total")
    static let bytesDelivered = Counter(label: "replay_bytes_delivered_total")
    static let connections = Meter(label: "replay_connections")
    static let subscriptions = Meter(label: "replay_subscriptions")
    static let longPolls = Meter(label: "replay_http_long_polls")
    static let sseReaders = Meter(label: "replay_http_sse_readers")
    /// SSE readers served with no task of their own (`ParkedEventStream`), of all those
    /// `replay_http_sse_readers` counts: the rest are served in their connection's task.
    static let sseReadersParked = Meter(label: "replay_http_sse_readers_parked")
    /// HTTP connections open, refused beyond `--http-max-connections`, and closed because
    /// their request head did not arrive within `--http-header-timeout`.
    static let httpConnections = Meter(label: "replay_http_connections")
    static let httpConnectionsShed = Counter(label: "replay_http_connections_shed_total")
    static let httpHeaderTimeouts = Counter(label: "replay_http_header_timeouts_total")
    /// POSTs to a stream answered on their connection's event loop (`InlineAppendHandler`),
    /// of all those `hb_requests` counts: what is left went through the router.
    static let inlineAppends = Counter(label: "replay_http_appends_inline_total")
    /// Of those, the POSTs read from the connection's bytes and answered in bytes, before
    /// NIO's HTTP codec (`FramedAppendHandler`).
    static let framedAppends = Counter(label: "replay_http_appends_framed_total")
    /// Socket commands refused by the access rules.
    static let socketDenied = Counter(label: "replay_socket_denied_total")
    /// HTTP requests refused by the token rules (401 and 403).
    static let deniedRequests = Counter(label: "replay_http_denied_total")
    /// Requests and commands refused for going over a client's rate (429, `rate_limited`).
    static let rateLimited = Counter(label: "replay_rate_limited_total", dimensions: [("door", "http")])
    static let socketRateLimited = Counter(label: "replay_rate_limited_total", dimensions: [("door", "socket")])
    /// Streams a token was refused for having created its limit of them.
    static let streamQuotaRefusals = Counter(label: "replay_stream_quota_refusals_total")
    /// TLS connections closed for not finishing their handshake within the header timeout.
    static let tlsHandshakeTimeouts = Counter(label: "replay_http_tls_handshake_timeouts_total")

    /// Makes every counter and meter now, so that /metrics shows each from the start at
    /// zero: `increase()` and `rate()` in an alert see the first event, which they miss
    /// when a series appears with it.
    static func register() {
        _ = (eventsDelivered, bytesDelivered, connections, subscriptions, longPolls, sseReaders, sseReadersParked, httpConnections)
        _ = (httpConnectionsShed, httpHeaderTimeouts, inlineAppends, socketDenied, deniedRequests, rateLimited)
        _ = (socketRateLimited, streamQuotaRefusals, tlsHandshakeTimeouts, framedAppends)
        SubscriptionMetrics.register()
    }

    static func delivered(events: Int, bytes: Int) {
        eventsDelivered.increment(by: events)
        bytesDelivered.increment(by: bytes)
    }
}

extension ReplayServer {
    /// Makes the daemon's and its store's counters now, at zero (call after bootstrapping a
    /// metrics backend): see `DaemonMetrics.register()`.
    public static func registerMetrics() {
        DaemonMetrics.register()
        EventStore.registerMetrics()
    }
}
