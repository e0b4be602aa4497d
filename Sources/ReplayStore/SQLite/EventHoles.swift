import GRDB
import ReplayModel

/// The `event_holes` table (`EventHole`): what a SQLite read or the writer asks of it.
enum EventHoles {
    /// The hole of `stream` that ends at `sequence`: where a read that starts after a hole
    /// takes its chain from.
    static func hole(of stream: Int64, endingAt sequence: UInt64, _ db: Database) throws -> EventHole? {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT from_seq, through_seq, hash FROM event_holes WHERE stream_id = ? AND through_seq = ?"),
            arguments: [stream, Int64(sequence)])
        return row.map(Self.hole)
    }

    /// The hole of `stream` that holds `sequence`, if one does.
    static func hole(of stream: Int64, containing sequence: UInt64, _ db: Database) throws -> EventHole? {
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT from_seq, through_seq, hash FROM event_holes WHERE stream_id = ? AND through_seq >= ? ORDER BY through_seq LIMIT 1"),
            arguments: [stream, Int64(sequence)])
        return row.map(Self.hole).flatMap { $0.from <= sequence ? $0 : nil }
    }

    /// The holes a removal of `from...through` merges with: those that end inside it or
    /// just before it, and the one that starts just after it or holds its end.
    static func neighbours(of stream: Int64, from: UInt64, through: UInt64, _ db: Database) throws -> [EventHole] {
        var holes = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT from_seq, through_seq, hash FROM event_holes WHERE stream_id = ? AND through_seq BETWEEN ? AND ?"),
            arguments: [stream, Int64(from) - 1, Int64(through)]
        ).map(Self.hole)
        if let after = try hole(of: stream, containing: through + 1, db) { holes.append(after) }
        return holes
    }

    /// Replaces `merged`'s parts with it.
    static func write(_ merged: EventHole, replacing parts: [EventHole], stream: Int64, _ db: Database) throws {
        let delete = try db.cachedStatement(sql: "DELETE FROM event_holes WHERE stream_id = ? AND through_seq = ?")
        for part in parts { try delete.execute(arguments: [stream, Int64(part.through)]) }
        try db.cachedStatement(sql: "INSERT INTO event_holes (stream_id, through_seq, from_seq, hash) VALUES (?, ?, ?, ?)").execute(
            arguments: [stream, Int64(merged.through), Int64(merged.from), SQLiteTransaction.column(merged.hash)])
    }

    /// Removes the holes that end at or before `through`; the events they held.
    static func drop(of stream: Int64, through: UInt64, _ db: Database) throws -> Int {
        let events =
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT coalesce(sum(through_seq - from_seq + 1), 0) FROM event_holes WHERE stream_id = ? AND through_seq <= ?"),
                arguments: [stream, Int64(through)]) ?? 0
        guard events > 0 else { return 0 }
        try db.cachedStatement(sql: "DELETE FROM event_holes WHERE stream_id = ? AND through_seq <= ?").execute(arguments: [stream, Int64(through)])
        return events
    }

    private static func hole(_ row: Row) -> EventHole {
        EventHole(from: UInt64(row[0] as Int64), through: UInt64(row[1] as Int64), hash: StreamRow.hash(row[2]))
    }
}
