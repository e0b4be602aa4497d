import ReplayModel

/// Key compaction (a stream created with `compact=yes`): each key keeps its newest event,
/// and the events a newer one of their key superseded are removed, as Kafka's log cleaner
/// does, from the front as retention does and else as holes. A pass walks the stream in
/// bounded batches, each its own writer transaction, so that no commit grows long with it
/// (`CompactionService` drives the passes).
///
/// What is never removed: an event without a key; a key's newest event, unless it is a
/// tombstone older than the stream's tombstone retention; and any event a durable consumer
/// has not acknowledged or one of the stream's groups still needs (the floor
/// `keep_unacked` keeps for groups, here without a bound: compaction waits for them).
extension WriterRules {
    /// Events one batch reads at most: 4,096 keyed events of a few hundred bytes are read
    /// and, superseded, removed in a few milliseconds of the writer's time
    /// (docs/PERFORMANCE.md, "Key compaction").
    static var compactionRowsPerBatch: Int { 4_096 }
    /// Runs of removable events (between events that stay) one batch removes at most: each
    /// is a statement or a few, as expiry's are.
    static var compactionRunsPerBatch: Int { 256 }

    /// One batch of a pass over stream `name`, from `from` on, through `passEnd` (`nil`:
    /// the pass begins, and ends where the stream and its readers' floor are now).
    mutating func compact(_ name: String, from: UInt64, through passEnd: UInt64?) throws -> Result<CompactionStep, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        let record = streams[index].record
        guard let compaction = record.info.config.compaction else {
            return .success(CompactionStep(next: nil, through: record.info.lastSequence, removed: 0, tombstoneDue: nil))
        }
        let end = min(passEnd ?? record.compactionEnd, record.compactionEnd)
        // A fork's inherited events are its source's rows: the source compacts them.
        let start = max(from, record.info.firstSequence, (record.info.fork?.sequence ?? 0) + 1)
        guard start <= end else {
            streams[index].record.info.compactedAt = millis
            return .success(CompactionStep(next: nil, through: end, removed: 0, tombstoneDue: nil))
        }
        let rows = try db.compactionRows(of: record.id, from: start, through: end, limit: Self.compactionRowsPerBatch)
        let newest = try db.newestSequences(of: record.id, keys: Set(rows.lazy.compactMap(\.key)))
        let retention = Int64(compaction.tombstoneRetention * 1000)
        var tombstoneDue: Int64?
        // Runs of rows side by side that may go: a run spans the holes between its rows.
        var runs: [ClosedRange<UInt64>] = []
        var open: ClosedRange<UInt64>?
        for row in rows {
            var removable = false
            if let key = row.key, let newest = newest[key] {
                if row.sequence < newest {
                    removable = true
                } else if row.size == 0 {
                    removable = row.millis + retention <= millis
                    if !removable { tombstoneDue = min(tombstoneDue ?? .max, row.millis + retention) }
                }
            }
            if removable {
                open = (open?.lowerBound ?? row.sequence)...row.sequence
            } else if let run = open {
                runs.append(run)
                open = nil
            }
        }
        if let open { runs.append(open) }
        var next = rows.count == Self.compactionRowsPerBatch ? rows.last.map { $0.sequence + 1 } : nil
        let before = streams[index].record.info.eventCount
        for (number, run) in runs.enumerated() {
            guard number < Self.compactionRunsPerBatch else {
                next = run.lowerBound
                break
            }
            try Retention.remove(run, from: &streams[index].record, db)
        }
        let removed = before - streams[index].record.info.eventCount
        streams[index].record.info.compactedEvents += removed
        compactedEvents += removed
        if next == nil { streams[index].record.info.compactedAt = millis }
        return .success(CompactionStep(next: next, through: end, removed: removed, tombstoneDue: tombstoneDue))
    }
}

extension Catalog.Record {
    /// The last event compaction may look at now: the stream's end, or the event before
    /// the first one a durable consumer has not acknowledged or a group still needs.
    var compactionEnd: UInt64 {
        var end = info.lastSequence
        for consumer in consumers.values { end = min(end, consumer.ackedSequence) }
        for group in groups.values { end = min(end, group.floor - 1) }
        return end
    }
}
