import Foundation

/// The retention pass (once a second, `RetentionService`): age limits of idle streams,
/// expired streams, and producers idle past their lifetime. Capacity and byte limits are
/// kept by `finish` for every stream a batch touches.
extension WriterRules {
    /// The streams the pass may change: those with an age limit or an expiry.
    var retentionCandidates: [Catalog.Record] {
        catalog.all.filter { $0.info.config.maxAge != nil || $0.info.config.expiry != nil }
    }

    mutating func enforceRetention() throws {
        // Touched streams are trimmed to their age limit in `finish`.
        for record in catalog.all where record.info.config.maxAge != nil {
            _ = try touch(record.info.name)
        }
        // Streams past their expiry go as a whole (as their working copy in this batch has it).
        for stored in catalog.all where stored.info.config.expiry != nil && !stored.info.isSoftDeleted {
            guard let current = try record(stored.info.name), let deadline = catalog.deadline(of: current), deadline <= millis else { continue }
            try delete(current)
        }
        if producerExpiry.due(now: millis) {
            try db.expireProducers(before: millis - ProducerState.idleLifetimeMillis)
        }
    }
}
