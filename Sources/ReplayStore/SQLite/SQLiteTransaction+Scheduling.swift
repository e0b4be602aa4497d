import Foundation
import GRDB
import ReplayModel

/// Scheduled events' rows (migrations/0016_scheduled_events.sql). One process writes the
/// file, so the drain needs no lock: it reads the earliest due rows and deletes them, and
/// the batch appends them, all in the writer's transaction.
extension SQLiteTransaction {
    func insertScheduled(stream: Int64, _ request: ScheduleRequest, createdAt: Int64) throws -> Int64 {
        let db = try self.db
        try db.cachedStatement(
            sql: """
                INSERT INTO scheduled_events (stream_id, due_at, created_at, event_key, traceparent, payload, ttl_millis)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [stream, request.due, createdAt, request.key?.text, request.traceParent?.text, request.payload, request.ttl?.millis])
        return db.lastInsertedRowID
    }

    func deleteScheduled(stream: Int64, id: Int64) throws -> Bool {
        let db = try self.db
        try db.cachedStatement(sql: "DELETE FROM scheduled_events WHERE id = ? AND stream_id = ?").execute(arguments: [id, stream])
        return db.changesCount > 0
    }

    /// Nothing is locked up front here.
    func streamsWithDueEvents(by millis: Int64, limit: Int) throws -> [String] { [] }

    func takeDueEvents(by millis: Int64, limit: Int, streams: [String]?) throws -> [ScheduledEvent] {
        let db = try self.db
        let rows = try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT e.id, s.name, e.due_at, e.created_at, e.event_key, e.traceparent, e.payload, e.ttl_millis
                    FROM scheduled_events AS e JOIN streams AS s ON s.id = e.stream_id
                    WHERE e.due_at <= ? ORDER BY e.due_at, e.id LIMIT ?
                    """), arguments: [millis, limit])
        let delete = try db.cachedStatement(sql: "DELETE FROM scheduled_events WHERE id = ?")
        return try rows.map { row in
            let id: Int64 = row[0]
            try delete.execute(arguments: [id])
            return ScheduledEvent(
                id: id, stream: row[1], due: row[2], created: row[3], key: (row[4] as String?).flatMap(EventKey.init),
                traceParent: (row[5] as String?).flatMap(TraceParent.init), ttl: (row[7] as Int64?).flatMap { EventTTL(seconds: Double($0) / 1000) },
                payload: row[6])
        }
    }

    func nextScheduledDue() throws -> Int64? {
        try Int64.fetchOne(try db.cachedStatement(sql: "SELECT min(due_at) FROM scheduled_events"))
    }

    func nextScheduledDue(of stream: Int64) throws -> Int64? {
        try Int64.fetchOne(try db.cachedStatement(sql: "SELECT min(due_at) FROM scheduled_events WHERE stream_id = ?"), arguments: [stream])
    }

    func advanceSourceTick(stream: Int64, to tick: Int64) throws -> Bool {
        let db = try self.db
        try db.cachedStatement(
            sql: """
                INSERT INTO source_ticks (stream_id, last_tick) VALUES (?, ?)
                ON CONFLICT (stream_id) DO UPDATE SET last_tick = excluded.last_tick WHERE last_tick < excluded.last_tick
                """
        ).execute(arguments: [stream, tick])
        return db.changesCount > 0
    }

    static func lastSourceTick(of stream: Int64, _ db: Database) throws -> Int64? {
        try Int64.fetchOne(db, sql: "SELECT last_tick FROM source_ticks WHERE stream_id = ?", arguments: [stream])
    }

    // MARK: Reads (the pool's)

    static func scheduledEvents(of stream: Int64, name: String, limit: Int, _ db: Database) throws -> [ScheduledEvent] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT id, due_at, created_at, event_key, traceparent, payload FROM scheduled_events
                WHERE stream_id = ? ORDER BY due_at, id LIMIT ?
                """, arguments: [stream, limit]
        ).map { row in
            ScheduledEvent(
                id: row[0], stream: name, due: row[1], created: row[2], key: (row[3] as String?).flatMap(EventKey.init),
                traceParent: (row[4] as String?).flatMap(TraceParent.init), payload: row[5])
        }
    }
}
