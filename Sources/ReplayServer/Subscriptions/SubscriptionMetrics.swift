import Metrics

/// The Durable Streams subscriptions' metrics (`GET /metrics`; docs/HTTP.md, "Metrics").
enum SubscriptionMetrics {
    static let wakes = Counter(label: "replay_ds_wakes_total")
    static let claims = Counter(label: "replay_ds_claims_total")
    /// Requests refused as acting for a stale wake (`409 FENCED`).
    static let fenced = Counter(label: "replay_ds_fenced_total")
    static let leaseExpiries = Counter(label: "replay_ds_lease_expiries_total")
    static let webhookAttempts = Counter(label: "replay_ds_webhook_attempts_total")
    static let webhookFailures = Counter(label: "replay_ds_webhook_failures_total")
    /// From sending a delivery to its answer, failures included.
    static let webhookDuration = Metrics.Timer(label: "replay_ds_webhook_duration_seconds")
    static let subscriptions = Meter(label: "replay_ds_subscriptions")

    /// Each made now, at zero (`DaemonMetrics.register()`).
    static func register() {
        _ = (wakes, claims, fenced, leaseExpiries, webhookAttempts, webhookFailures, webhookDuration, subscriptions)
    }
}
