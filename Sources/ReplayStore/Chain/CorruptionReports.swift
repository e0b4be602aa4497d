import Logging
import Metrics
import ReplaySync

/// What the daemon says when a read meets a corrupt event (`StoreError.corruptEvent`): every
/// refused read counts in `replay_corrupt_event_reads_total`, and the log names each
/// corrupt event once (a reader retrying in a loop would otherwise fill the log with one
/// line).
enum CorruptionReports {
    static let reads = Counter(label: "replay_corrupt_event_reads_total")
    private static let logger = Logger(label: "replay.store")
    private static let named = Locked<Set<String>>([])

    /// Counts and, the first time, logs `error` if it is a corrupt event.
    static func note(_ error: StoreError) {
        guard case .corruptEvent(let stream, let sequence, _, _) = error else { return }
        reads.increment()
        let key = "\(stream) \(sequence)"
        guard named.withLock({ $0.insert(key).inserted }) else { return }
        logger.error("corrupt event, not served: \(error.description)")
    }

    static func register() {
        _ = reads
    }
}
