import Foundation

/// Another daemon's commits (a shared database): the streams it changed are read again
/// and told to the catalog and the hubs with this commit, without being written. Their new
/// events are read too, once for every live reader here, only where there is one: with
/// several daemons, each would otherwise read back everything every other one writes.
extension WriterRules {
    /// At most this many events are read per refreshed stream; a larger step is left to
    /// the cursors' own paged reads.
    static var refreshEventLimit: Int { 1024 }

    /// `names` are read again; the streams in `bounds` are known as they are now from the
    /// notice of the daemon that wrote them, unless this daemon has seen them since in a
    /// later state, or not at all: then they are read too.
    mutating func refresh(_ names: [String], bounds: [String: StreamBounds] = [:]) throws {
        for name in names + bounds.keys where indexByName[name] == nil && !deleted.contains(name) {
            let known = catalog[name]
            let record: Catalog.Record?
            if let known, let told = bounds[name]?.applied(to: known) {
                record = told
                StoreMetrics.refreshesFromNotices.increment()
            } else {
                record = try db.committedRecord(name)
                StoreMetrics.refreshesFromRows.increment()
            }
            refreshed[name] = .some(record)
            if let record, let known { try readBack(name, known: known, now: record) }
        }
    }

    /// Another daemon's new events in `name`, for the hubs' tail rings, if someone here
    /// reads it live.
    private mutating func readBack(_ name: String, known: Catalog.Record, now record: Catalog.Record) throws {
        guard known.id == record.id, liveReaders(name), record.info.lastSequence > known.info.lastSequence,
            record.info.lastSequence - known.info.lastSequence <= UInt64(Self.refreshEventLimit)
        else { return }
        let segments = LogSegments(of: record, from: known.info.lastSequence + 1, through: record.info.lastSequence) { catalog[$0] }
        var events: [StoredEvent] = []
        try forEachIntactEvent(segments, limit: Self.refreshEventLimit, byteBudget: 1 << 20) { sequence, time, payload, trace, hash, key in
            events.append(StoredEvent(sequence: sequence, time: time, payload: payload, traceParent: trace, hash: hash, key: key))
        }
        // Only a complete, contiguous run can go to the ring (retention may have
        // trimmed some already, or the byte budget stopped the read), and only while no
        // event may expire (`Catalog.mayHoldExpiringEvents`).
        if events.first?.sequence == known.info.lastSequence + 1, events.last?.sequence == record.info.lastSequence,
            !catalog.mayHoldExpiringEvents
        {
            refreshedEvents[name] = events
        }
    }
}
