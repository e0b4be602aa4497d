import GRDB
import ReplayModel

/// Where a stream's events `from...through` are stored: one range of its own rows, or, for
/// a fork, its source's part first (itself possibly a fork) and then its own. Forks share
/// their source's numbering, so the pieces line up without translation.
struct LogSegments {
    struct Segment: Equatable {
        let streamID: Int64
        let from: UInt64
        let through: UInt64
    }

    let segments: [Segment]

    init(of record: Catalog.Record, from: UInt64, through: UInt64, lookup: (String) -> Catalog.Record?) {
        segments = Self.resolve(record, from: from, through: min(through, EventKey.maxSequence), lookup: lookup, depth: 0)
    }

    private static func resolve(
        _ record: Catalog.Record, from: UInt64, through: UInt64, lookup: (String) -> Catalog.Record?, depth: Int
    ) -> [Segment] {
        guard from <= through else { return [] }
        guard let fork = record.info.fork, depth < 1000, let source = lookup(fork.source) else {
            return [Segment(streamID: record.id, from: from, through: through)]
        }
        var segments: [Segment] = []
        if from <= fork.sequence {
            segments = resolve(source, from: from, through: min(through, fork.sequence), lookup: lookup, depth: depth + 1)
        }
        let own = max(from, fork.sequence + 1)
        if own <= through { segments.append(Segment(streamID: record.id, from: own, through: through)) }
        return segments
    }

    /// Visits up to `limit` events, oldest first, stopping after the event that reaches
    /// `byteBudget` payload bytes; the time and payload are SQLite's buffers, valid only
    /// during the call.
    func forEachEvent(
        limit: Int, byteBudget: Int, _ db: Database,
        _ body: (_ sequence: UInt64, _ time: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer) -> Void
    ) throws {
        var remaining = limit
        var bytes = 0
        // Events of one commit share its time: format each distinct time once.
        var time: (millis: Int64, text: [UInt8]) = (.min, [])
        for segment in segments where remaining > 0 && bytes < byteBudget {
            let statement = RawStatement(
                try db.cachedStatement(sql: "SELECT key, time, payload FROM event_log WHERE key BETWEEN ? AND ? ORDER BY key LIMIT ?"),
                in: db)
            statement.bind(EventKey.key(stream: segment.streamID, sequence: segment.from), at: 1)
            statement.bind(EventKey.key(stream: segment.streamID, sequence: segment.through), at: 2)
            statement.bind(Int64(remaining), at: 3)
            try statement.forEachRow { row in
                let millis = row.int64(1)
                if millis != time.millis { time = (millis, Array(Timestamp.format(millis: millis).utf8)) }
                let payload = row.bytes(2)
                time.text.withUnsafeBytes { text in
                    body(EventKey.sequence(of: row.int64(0)), text, payload)
                }
                remaining -= 1
                bytes += payload.count
                return bytes < byteBudget && remaining > 0
            }
        }
    }
}
