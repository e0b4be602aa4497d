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
}
