import Foundation
import GRDB

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
            let rows = try Row.fetchCursor(
                db.cachedStatement(sql: "SELECT seq, length(payload) FROM event_log WHERE stream_id = ? AND seq >= ? ORDER BY seq"),
                arguments: [record.id, Int64(record.info.firstSequence)])
            while excess > 0, let row = try rows.next() {
                through = UInt64(row[0] as Int64)
                excess -= row[1] as Int
            }
            try remove(through: through, from: &record, db)
        }
        if let maxAge = config.maxAge, record.info.eventCount > 0 {
            let cutoff = Timestamp.format(now.addingTimeInterval(-maxAge))
            let newest = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT max(seq) FROM event_log WHERE stream_id = ? AND time < ?"),
                arguments: [record.id, cutoff])
            if let newest { try remove(through: UInt64(newest), from: &record, db) }
        }
    }

    private func remove(through last: UInt64, from record: inout Catalog.Record, _ db: Database) throws {
        guard last >= record.info.firstSequence else { return }
        let freed = try Int.fetchAll(
            db.cachedStatement(sql: "DELETE FROM event_log WHERE stream_id = ? AND seq >= ? AND seq <= ? RETURNING length(payload)"),
            arguments: [record.id, Int64(record.info.firstSequence), Int64(last)])
        record.info.byteCount -= freed.reduce(0, +)
        record.info.firstSequence = last + 1
    }
}
