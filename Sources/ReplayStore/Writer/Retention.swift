import Foundation
import ReplayModel

/// Removes the oldest events of a stream until it fits its capacity, byte and age limits.
/// Deleting only from the front keeps the retained window contiguous, so the stream row's
/// first and last sequence numbers describe it exactly.
struct Retention {
    let now: Date

    func trim(_ record: inout Catalog.Record, _ db: some LogTransaction) throws {
        let config = record.info.config
        if let capacity = config.capacity, record.info.eventCount > capacity {
            try remove(through: record.info.lastSequence - UInt64(capacity), from: &record, db)
        }
        if let maxBytes = config.maxBytes, record.info.byteCount > maxBytes {
            // Walk from the oldest until enough bytes would be freed.
            var excess = record.info.byteCount - maxBytes
            var through = record.info.firstSequence - 1
            try db.walkPayloadSizes(of: record.id, from: record.info.firstSequence) { sequence, size in
                through = sequence
                excess -= size
                return excess > 0
            }
            try remove(through: through, from: &record, db)
        }
        if let maxAge = config.maxAge, record.info.eventCount > 0 {
            let cutoff = Timestamp.millis(now.addingTimeInterval(-maxAge))
            let window = record.info.firstSequence...record.info.lastSequence
            let firstKept = try db.firstSequence(of: record.id, in: window, atOrAfter: cutoff)
            try remove(through: firstKept - 1, from: &record, db)
        }
    }

    private func remove(through last: UInt64, from record: inout Catalog.Record, _ db: some LogTransaction) throws {
        guard last >= record.info.firstSequence else { return }
        record.info.byteCount -= try db.deleteEvents(of: record.id, from: record.info.firstSequence, through: last)
        record.info.firstSequence = last + 1
    }
}
