import Foundation
import GRDB
import ReplayModel

/// Removes the oldest events of a stream until it fits its capacity, byte and age limits.
/// Deleting only from the front keeps the retained window contiguous, so the stream row's
/// first and last sequence numbers describe it exactly.
struct Retention {
    let now: Date

    func trim(_ record: inout Catalog.Record, _ db: Database) throws {
        let config = record.info.config
        if let capacity = config.capacity, record.info.eventCount > capacity {
            try remove(through: record.info.lastSequence - UInt64(capacity), from: &record, db)
        }
        if let maxBytes = config.maxBytes, record.info.byteCount > maxBytes {
            // Walk from the oldest until enough bytes would be freed.
            var excess = record.info.byteCount - maxBytes
            var through = record.info.firstSequence - 1
            let range = EventKey.range(of: record.id)
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: "SELECT key, length(payload) FROM event_log WHERE key BETWEEN ? AND ? ORDER BY key"),
                arguments: [EventKey.key(stream: record.id, sequence: record.info.firstSequence), range.upperBound])
            while excess > 0, let row = try rows.next() {
                through = EventKey.sequence(of: row[0])
                excess -= row[1] as Int
            }
            try remove(through: through, from: &record, db)
        }
        if let maxAge = config.maxAge, record.info.eventCount > 0 {
            let cutoff = Timestamp.millis(now.addingTimeInterval(-maxAge))
            let window = record.info.firstSequence...record.info.lastSequence
            let firstKept = try TimeSearch.firstSequence(of: record.id, in: window, atOrAfter: cutoff, db)
            try remove(through: firstKept - 1, from: &record, db)
        }
    }

    private func remove(through last: UInt64, from record: inout Catalog.Record, _ db: Database) throws {
        guard last >= record.info.firstSequence else { return }
        let freed = try Int.fetchAll(
            db.cachedStatement(sql: "DELETE FROM event_log WHERE key BETWEEN ? AND ? RETURNING length(payload)"),
            arguments: [EventKey.key(stream: record.id, sequence: record.info.firstSequence), EventKey.key(stream: record.id, sequence: last)])
        record.info.byteCount -= freed.reduce(0, +)
        record.info.firstSequence = last + 1
    }
}
