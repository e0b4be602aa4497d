import Metrics

/// The writer's metrics (swift-metrics: a no-op until the process bootstraps a backend;
/// `replayd` bootstraps Prometheus). Recorded once per commit, never per event.
enum StoreMetrics {
    static let commits = Counter(label: "replay_commits_total")
    static let failedCommits = Counter(label: "replay_commit_failures_total")
    /// Requests per group commit (a histogram).
    static let batchSize = Recorder(label: "replay_commit_batch_requests", aggregate: true)
    static let commitDuration = Metrics.Timer(label: "replay_commit_duration_seconds")
    static let eventsPublished = Counter(label: "replay_events_published_total")
    static let bytesPublished = Counter(label: "replay_bytes_published_total")
    /// Scheduled events appended when they fell due, and dropped then because their stream
    /// was gone, ended or derived.
    static let scheduledAppended = Counter(label: "replay_scheduled_appended_total")
    static let scheduledDropped = Counter(label: "replay_scheduled_dropped_total")
    /// Events the retention pass removed because their time-to-live ran out.
    static let eventsExpired = Counter(label: "replay_events_expired_total")
    /// Events compaction removed because a newer event of their key superseded them (or,
    /// tombstones, because their retention ran out).
    static let eventsCompacted = Counter(label: "replay_events_compacted_total")

    /// PostgreSQL batches committed on the rows as the daemon last saw them, without the
    /// locks (`rows="cached"`), and under the locks (`rows="locked"`).
    static let cachedRowCommits = Counter(label: "replay_postgres_commits_total", dimensions: [("rows", "cached")])
    static let lockedRowCommits = Counter(label: "replay_postgres_commits_total", dimensions: [("rows", "locked")])
    /// Batches tried on cached rows that met a row another writer had changed, and ran
    /// again under the locks.
    static let cachedRowConflicts = Counter(label: "replay_postgres_cached_conflicts_total")
    /// Streams another daemon changed, learned from its notice alone (`from="notice"`:
    /// only their bounds changed) or by reading their rows again (`from="row"`).
    static let refreshesFromNotices = Counter(label: "replay_postgres_refreshes_total", dimensions: [("from", "notice")])
    static let refreshesFromRows = Counter(label: "replay_postgres_refreshes_total", dimensions: [("from", "row")])
    /// 1 while this daemon's LISTEN session to PostgreSQL is open, 0 while it reconnects:
    /// the one connection that is always open, so its loss says the database is
    /// unreachable even when nothing is being written.
    static let postgresConnected = Gauge(label: "replay_postgres_connected")

    /// The writer's counters and histograms, made now at zero (the PostgreSQL ones appear
    /// when a PostgreSQL store first uses them).
    static func register() {
        _ = (
            commits, failedCommits, batchSize, commitDuration, eventsPublished, bytesPublished, scheduledAppended, scheduledDropped, eventsExpired,
            eventsCompacted
        )
        CorruptionReports.register()
    }
}

extension EventStore {
    /// Makes the store's metrics now, at zero, so that /metrics shows them before the
    /// first commit (call after bootstrapping a metrics backend).
    public static func registerMetrics() {
        StoreMetrics.register()
    }
}
