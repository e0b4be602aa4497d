import Foundation
import NIOCore
import PostgresNIO
import ReplayModel

/// A stream's new events and its row's update, in one statement (a data-modifying
/// `WITH`, which PostgreSQL runs whether or not the rest refers to it), optionally held to
/// the row version the daemon last saw, with the commit's `NOTIFY` when it is the batch's
/// last. Its answer is the row's id and new version (`RowVersions`).
///
/// A prepared statement: PostgreSQL parses and plans it once per connection, where an
/// unnamed one was parsed and planned for every batch (a quarter of a millisecond in the
/// statement log, a sixth of a batch's time with one publisher). So its text never
/// changes: every value is a parameter, cast to the type its Swift value is encoded as.
struct StreamRowUpdate: PostgresPreparedStatement {
    typealias Row = (id: Int64?, version: Int64?)

    /// Its name on each connection. postgres-nio's default, `String(reflecting:)` of the
    /// type, was built again for every batch.
    static let name = "replay_stream_row_update"

    static let sql = """
        WITH inserted AS (
            INSERT INTO event_log (stream_id, seq, time, payload, hash)
            SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bytea[], $5::bytea[])),
        updated AS (
            UPDATE streams SET first_seq = $6::bigint, last_seq = $7::bigint, event_count = $8::bigint, byte_count = $9::bigint,
                terminal = $10::text, terminal_message = $11::text, terminal_at = $12::text, last_time = $13::bigint,
                writer_seq = $14::text, deleted_at = $15::text, chain_head = $16::bytea, chain_base = $17::bytea,
                scheduled_count = $21::bigint, next_due = $22::bigint, removed_events = $23::bigint, removed_through = $24::bigint,
                compacted_at = $25::bigint, compacted_events = $26::bigint
            WHERE id = $18::bigint AND ($19::text IS NULL OR xmin = $19::text::xid)
            RETURNING id, xmin::text::bigint AS version)
        SELECT max(id), max(version), replay_require_current($19::text IS NULL OR count(*) = 1),
            (SELECT pg_notify('\(PostgresLog.channel)', $20::text) WHERE $20::text IS NOT NULL)
        FROM updated
        """

    let record: Catalog.Record
    let events: PendingEvents
    /// The row version it is written on (`nil`: the row is locked).
    let expectedVersion: Int64?
    /// The commit's notice for the other daemons (`PostgresLog.channel`).
    var notice: String?

    func makeBindings() throws -> PostgresBindings {
        let info = record.info
        var binds = PostgresBindings(capacity: 26)
        binds.append(events.streams)
        binds.append(events.sequences)
        binds.append(events.times)
        binds.append(events.payloads)
        binds.append(events.hashes)
        binds.append(Int64(info.firstSequence))
        binds.append(Int64(info.lastSequence))
        binds.append(Int64(info.eventCount))
        binds.append(Int64(info.byteCount))
        binds.append(info.terminal?.kind)
        binds.append(info.terminal?.message)
        binds.append(info.terminalAt.map(Timestamp.format))
        binds.append(record.lastTime)
        binds.append(info.writerSequence)
        binds.append(info.deletedAt.map(Timestamp.format))
        binds.append(Self.column(record.chainHead))
        binds.append(Self.column(record.chainBase))
        binds.append(record.id)
        binds.append(expectedVersion.map(String.init))
        binds.append(notice)
        binds.append(Int64(info.scheduledCount))
        binds.append(info.nextDue)
        binds.append(Int64(info.removedEvents))
        binds.append(Int64(info.removedThrough))
        binds.append(info.compactedAt)
        binds.append(Int64(info.compactedEvents))
        return binds
    }

    /// An update of no row (ids start at 1), with nothing to insert or notify: run once on
    /// each new connection before any transaction, and waited for, so that the statement
    /// is prepared there. postgres-nio queues a statement's first execution behind its
    /// preparation, after whatever was sent meanwhile: inside a transaction that would run
    /// it after the `COMMIT`.
    static var preparation: StreamRowUpdate {
        let nothing = StreamInfo(
            name: "", config: .unlimited, createdAt: Date(timeIntervalSince1970: 0), firstSequence: 1, lastSequence: 0,
            byteCount: 0, terminal: nil, terminalAt: nil, fork: nil)
        return StreamRowUpdate(record: Catalog.Record(id: 0, info: nothing), events: PendingEvents(), expectedVersion: nil)
    }

    /// A chain hash as its column holds it: NULL for none.
    static func column(_ hash: EventHash) -> ByteBuffer? {
        hash == .zero ? nil : hash.withUnsafeBytes { ByteBuffer(bytes: $0) }
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let columns = row.makeRandomAccess()
        return (try columns[0].decode(Int64?.self), try columns[1].decode(Int64?.self))
    }
}
