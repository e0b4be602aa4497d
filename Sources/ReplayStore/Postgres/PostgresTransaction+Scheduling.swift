import Foundation
import NIOCore
import PostgresNIO
import ReplayModel

/// Scheduled events' rows (migrations/postgres/0011_scheduled_events.sql). Several daemons
/// drain one table: a drain first finds the streams of the due rows (locked up front with
/// the batch's others, in the one order), then deletes the due rows of those streams that
/// no other transaction holds (`FOR UPDATE … SKIP LOCKED`) and appends them, in the same
/// transaction. A row another daemon is taking is passed over, and is gone once it commits,
/// so each due event is appended by one daemon, once.
extension PostgresTransaction {
    func insertScheduled(stream: Int64, _ request: ScheduleRequest, createdAt: Int64) throws -> Int64 {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            INSERT INTO scheduled_events (stream_id, due_at, created_at, event_key, traceparent, payload, ttl_millis)
            VALUES (\(stream), \(request.due), \(createdAt), \(request.key?.text), \(request.traceParent?.text), \(ByteBuffer(data: request.payload)),
                    \(request.ttl?.millis))
            RETURNING id
            """)
        return try Self.single(rows, Int64.self)
    }

    func deleteScheduled(stream: Int64, id: Int64) throws -> Bool {
        try requireLocks()
        try flush()
        let rows = try session.query("DELETE FROM scheduled_events WHERE id = \(id) AND stream_id = \(stream) RETURNING id")
        return !rows.rows.isEmpty
    }

    func streamsWithDueEvents(by millis: Int64, limit: Int) throws -> [String] {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            SELECT DISTINCT s.name FROM (SELECT stream_id FROM scheduled_events WHERE due_at <= \(millis) ORDER BY due_at, id LIMIT \(limit)) AS e
            JOIN streams AS s ON s.id = e.stream_id
            """)
        return try rows.rows.map { try $0.decode(String.self) }
    }

    func takeDueEvents(by millis: Int64, limit: Int, streams: [String]?) throws -> [ScheduledEvent] {
        try requireLocks()
        try flush()
        guard let streams, !streams.isEmpty else { return [] }
        let rows = try session.query(
            """
            WITH taken AS (
                DELETE FROM scheduled_events WHERE id IN (
                    SELECT e.id FROM scheduled_events AS e JOIN streams AS s ON s.id = e.stream_id
                    WHERE e.due_at <= \(millis) AND s.name = ANY(\(streams))
                    ORDER BY e.due_at, e.id LIMIT \(limit) FOR UPDATE OF e SKIP LOCKED)
                RETURNING id, stream_id, due_at, created_at, event_key, traceparent, payload, ttl_millis)
            SELECT t.id, s.name, t.due_at, t.created_at, t.event_key, t.traceparent, t.payload, t.ttl_millis
            FROM taken AS t JOIN streams AS s ON s.id = t.stream_id ORDER BY t.due_at, t.id
            """)
        return try rows.rows.map { row in
            let c = try row.decode((Int64, String, Int64, Int64, String?, String?, ByteBuffer, Int64?).self)
            return ScheduledEvent(
                id: c.0, stream: c.1, due: c.2, created: c.3, key: c.4.flatMap(EventKey.init), traceParent: c.5.flatMap(TraceParent.init),
                ttl: c.7.flatMap { EventTTL(seconds: Double($0) / 1000) },
                payload: Data(c.6.readableBytesView))
        }
    }

    func nextScheduledDue() throws -> Int64? {
        try requireLocks()
        try flush()
        let rows = try session.query("SELECT min(due_at) FROM scheduled_events")
        return try rows.rows.first?.decode(Int64?.self)
    }

    func nextScheduledDue(of stream: Int64) throws -> Int64? {
        try requireLocks()
        try flush()
        let rows = try session.query("SELECT min(due_at) FROM scheduled_events WHERE stream_id = \(stream)")
        return try rows.rows.first?.decode(Int64?.self)
    }

    func advanceSourceTick(stream: Int64, to tick: Int64) throws -> Bool {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            INSERT INTO source_ticks (stream_id, last_tick) VALUES (\(stream), \(tick))
            ON CONFLICT (stream_id) DO UPDATE SET last_tick = excluded.last_tick WHERE source_ticks.last_tick < excluded.last_tick
            RETURNING stream_id
            """)
        return !rows.rows.isEmpty
    }

    static func lastSourceTick(of stream: Int64, _ session: PostgresSession) throws -> Int64? {
        let rows = try session.query("SELECT last_tick FROM source_ticks WHERE stream_id = \(stream)")
        return try rows.rows.first?.decode(Int64.self)
    }

    // MARK: Reads (the readers')

    static func scheduledEvents(of stream: Int64, name: String, limit: Int, _ session: PostgresSession) throws -> [ScheduledEvent] {
        let rows = try session.query(
            """
            SELECT id, due_at, created_at, event_key, traceparent, payload FROM scheduled_events
            WHERE stream_id = \(stream) ORDER BY due_at, id LIMIT \(limit)
            """)
        return try rows.rows.map { row in
            let c = try row.decode((Int64, Int64, Int64, String?, String?, ByteBuffer).self)
            return ScheduledEvent(
                id: c.0, stream: name, due: c.1, created: c.2, key: c.3.flatMap(EventKey.init), traceParent: c.4.flatMap(TraceParent.init),
                payload: Data(c.5.readableBytesView))
        }
    }
}
