import ReplayModel

/// Per-event expiry (`ttl=`, a stream's `event_ttl`): reads never serve an expired event,
/// and the retention pass removes them here, a bounded number per batch so that no commit
/// grows long with them (the pass asks again while more are expired).
extension WriterRules {
    /// Expired events one batch takes from the expiry index at most: 1,024 from a
    /// stream's front are about 1.4 ms of the writer's time (docs/PERFORMANCE.md).
    static var expiredEventsPerBatch: Int { 1_024 }
    /// Runs of consecutive expired events one batch removes at most: each is a statement or
    /// a few (a hole is merged with its neighbours), and expiries scattered one by one
    /// through a stream would otherwise make thousands.
    static var expiredRunsPerBatch: Int { 256 }

    /// Removes the events expired by the batch's time, earliest expiry first: from the
    /// front as retention does, else leaving holes. Whether more are expired than this
    /// batch removed.
    mutating func expireEvents() throws -> Bool {
        let expired = try db.expiredEvents(
            by: millis, limit: Self.expiredEventsPerBatch, streams: DB.locksStreamsUpFront ? expiringStreams : nil)
        var byStream: [String: [UInt64]] = [:]
        for event in expired { byStream[event.stream, default: []].append(event.sequence) }
        var runs = 0
        for (name, sequences) in byStream.sorted(by: { $0.key < $1.key }) {
            guard let index = try expiring(name) else { continue }
            for run in sequences.sorted().consecutiveRuns {
                guard runs < Self.expiredRunsPerBatch else { return true }
                let before = streams[index].record.info.eventCount
                try Retention.remove(run, from: &streams[index].record, db)
                expiredEvents += before - streams[index].record.info.eventCount
                runs += 1
            }
        }
        // More only if this batch got somewhere: rows it could not remove are not asked for
        // again and again.
        return expired.count == Self.expiredEventsPerBatch && expiredEvents > 0
    }

    /// The stream whose events expired, brought into the batch: also one deleted while its
    /// forks read from it (its events stay for them, and expire for them as for anyone).
    private mutating func expiring(_ name: String) throws -> Int? {
        if let index = indexByName[name] { return index }
        guard let record = try lookUp(name) else { return nil }
        return add(record)
    }
}
