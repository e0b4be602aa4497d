import Foundation
import ReplayModel

/// Removes the oldest events of a stream until it fits its capacity, byte and age limits.
/// The window's first and last sequence numbers describe it, less its holes (events
/// removed from inside it, `EventHole`): a hole that retention reaches goes with it, and
/// the window never starts inside one.
///
/// With `keep_unacked` (retention that waits for groups, as Redis 8.2's `ACKED` trimming and
/// JetStream's interest retention), an event one of the stream's consumer groups still
/// needs (pending, or not handed out yet) is kept beyond the limits, up to `keep_unacked`
/// events beyond them: that bound is hard, so a group whose members are gone cannot fill
/// the disk. Past it the oldest go anyway, and their groups see the usual gap.
struct Retention {
    let now: Date

    func trim(_ record: inout Catalog.Record, _ db: some LogTransaction) throws {
        var through = try lastOverTheLimits(record, db)
        if let keep = record.info.config.keepUnacked, let floor = record.groups.values.map(\.floor).min(), floor <= through {
            // Keep from the first event a group needs, but never more than `keep` beyond the limits.
            through = max(floor - 1, through - min(UInt64(keep), through))
        }
        try Self.removeOldest(through: through, from: &record, db)
    }

    /// The last event the limits alone would remove (below `firstSequence`: none).
    private func lastOverTheLimits(_ record: Catalog.Record, _ db: some LogTransaction) throws -> UInt64 {
        let info = record.info
        let config = info.config
        var through = info.firstSequence - 1
        guard info.eventCount > 0 else { return through }
        if let capacity = config.capacity, info.eventCount > capacity {
            if info.removedEvents == 0 {
                through = max(through, info.lastSequence - UInt64(capacity))
            } else {
                // Holes: count the events that are there, from the oldest.
                var excess = info.eventCount - capacity
                try db.walkPayloadSizes(of: record.id, from: info.firstSequence) { sequence, _ in
                    through = max(through, sequence)
                    excess -= 1
                    return excess > 0
                }
            }
        }
        if let maxBytes = config.maxBytes, info.byteCount > maxBytes {
            // Walk from the oldest until enough bytes would be freed.
            var excess = info.byteCount - maxBytes
            var last = info.firstSequence - 1
            try db.walkPayloadSizes(of: record.id, from: info.firstSequence) { sequence, size in
                last = sequence
                excess -= size
                return excess > 0
            }
            through = max(through, last)
        }
        if let maxAge = config.maxAge {
            let cutoff = Timestamp.millis(now.addingTimeInterval(-maxAge))
            let firstKept = try db.firstSequence(of: record.id, in: info.firstSequence...info.lastSequence, atOrAfter: cutoff)
            through = max(through, firstKept - 1)
        }
        return through
    }

    /// Removes events `range` (those of it still retained): from the front as retention
    /// does where it starts there, else from inside the window, leaving a hole.
    static func remove(_ range: ClosedRange<UInt64>, from record: inout Catalog.Record, _ db: some LogTransaction) throws {
        let lower = max(range.lowerBound, record.info.firstSequence)
        let upper = min(range.upperBound, record.info.lastSequence)
        guard lower <= upper else { return }
        guard lower > record.info.firstSequence else { return try removeOldest(through: upper, from: &record, db) }
        let removed = try db.removeEvents(of: record.id, from: lower, through: upper)
        guard removed.events > 0 else { return }
        record.info.removedEvents += removed.events
        record.info.byteCount -= removed.bytes
        record.info.removedThrough = max(record.info.removedThrough, upper)
    }

    /// Removes the events up to `last`, and the holes up to there; a hole that holds the
    /// event after `last` goes whole, so the window never starts inside one.
    static func removeOldest(through last: UInt64, from record: inout Catalog.Record, _ db: some LogTransaction) throws {
        guard last >= record.info.firstSequence else { return }
        var last = last
        var base = try db.eventHash(stream: record.id, sequence: last)
        if record.info.removedEvents > 0 {
            if last < record.info.lastSequence, let hole = try db.hole(of: record.id, containing: last + 1) {
                (last, base) = (hole.through, hole.hash)
            } else if base == nil, let hole = try db.hole(of: record.id, containing: last), hole.through == last {
                base = hole.hash
            }
            record.info.removedEvents -= try db.dropHoles(of: record.id, through: last)
        }
        // The chain outlives its events: the base becomes the last removed event's hash (a
        // fork's inherited events are its source's rows, and leave its base as it was).
        if let base { record.chainBase = base }
        record.info.byteCount -= try db.deleteEvents(of: record.id, from: record.info.firstSequence, through: last)
        record.info.firstSequence = last + 1
    }
}
