import ReplayModel

/// Key compaction's removals (a stream created with `compact=yes`): runs of events a pass
/// judged superseded beside the writer (`CompactionPlan`), removed from the front as
/// retention does and else as holes. Each step is a short transaction of its own.
///
/// The writer keeps the one rule the judgment could not: nothing a durable consumer has
/// not acknowledged, or one of the stream's groups still needs, is removed (the floor
/// `keep_unacked` keeps for groups, here without a bound: compaction waits for them). A
/// newer event of a key never stops being newer, so what the pass judged stays true.
extension WriterRules {
    /// Removes `runs` of stream `name` up to its readers' floor; the events removed. The
    /// pass's last step (`finishesPass`) records its time.
    mutating func removeCompacted(_ name: String, runs: [ClosedRange<UInt64>], finishesPass: Bool) throws -> Result<Int, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        guard streams[index].record.info.config.compaction != nil else { return .success(0) }
        let end = streams[index].record.compactionEnd
        let before = streams[index].record.info.eventCount
        for run in runs where run.lowerBound <= end {
            try Retention.remove(run.lowerBound...min(run.upperBound, end), from: &streams[index].record, db)
        }
        let removed = before - streams[index].record.info.eventCount
        streams[index].record.info.compactedEvents += removed
        compactedEvents += removed
        if finishesPass { streams[index].record.info.compactedAt = millis }
        return .success(removed)
    }
}

extension Catalog.Record {
    /// The last event compaction may remove now: the stream's end, or the event before the
    /// first one a durable consumer has not acknowledged or a group still needs.
    var compactionEnd: UInt64 {
        var end = info.lastSequence
        for consumer in consumers.values { end = min(end, consumer.ackedSequence) }
        for group in groups.values { end = min(end, group.floor - 1) }
        return end
    }
}
