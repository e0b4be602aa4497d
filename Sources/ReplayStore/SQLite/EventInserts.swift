import Foundation
import GRDB
import ReplayModel

/// The events a batch inserts, written together: one `INSERT` of up to 32 rows rather than
/// one per event. Published events and a derivation's outputs (which name their origin) go
/// the same way.
///
/// SQLite makes two to four allocations each time an `INSERT` statement runs, however many
/// rows it carries: from C (`tools/insert_allocations.c`), 2.00 per row at one row a
/// statement, 0.13 at 32. One statement per event, they were most of a publish's
/// allocations, and a step, a reset and the VM's start were part of its CPU.
///
/// Rows wait here until 32 are ready, or until anything else touches the database
/// (`SQLiteTransaction.db` writes them first), so every statement of the batch still sees
/// every event inserted before it, and nothing changes for the batch's rules: a failed
/// insert fails the whole batch, as it did. The rows' bytes (payloads, hashes, stamps,
/// trace contexts, keys) are copied into one buffer for the statement, bound in place.
struct EventInserts {
    struct Row {
        let key: Int64
        let millis: Int64
        let payload: Data
        let stamp: EventStamp?
        let hash: EventHash
        let trace: TraceParent?
        /// The input event a derivation's output came from (`stream:seq`).
        let origin: String?
        /// The event's own key (`key=`); `key` above is the row's.
        let eventKey: EventKey?
        /// When it expires (ms), if it does.
        let expiresAt: Int64?
    }

    private static let hashBytes = 32
    private var rows: [Row] = []

    var isEmpty: Bool { rows.isEmpty }

    /// Adds a row; whether a full chunk is now waiting.
    mutating func add(_ row: Row) -> Bool {
        rows.append(row)
        return rows.count >= RowChunks.largest
    }

    /// Writes every waiting row.
    mutating func write(_ db: Database) throws {
        try RowChunks.forEach(rows) { try write($0, db) }
        rows.removeAll(keepingCapacity: true)
    }

    private func write(_ rows: ArraySlice<Row>, _ db: Database) throws {
        let insert = try RawStatement(db.cachedStatement(sql: Self.statements.sql(rows: rows.count)), in: db)
        let bytes = rows.reduce(0) { total, row in
            total + row.payload.count + Self.hashBytes + (row.stamp == nil ? 0 : EventStamp.maxBytes) + (row.trace?.bytes.count ?? 0)
                + (row.origin?.utf8.count ?? 0) + (row.eventKey?.bytes.count ?? 0)
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes, 1), alignment: 8)
        defer { buffer.deallocate() }
        var offset = 0
        /// Copies `source` into the buffer; its place there, valid until the statement ran.
        func place(_ source: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
            let start = offset
            if let base = source.baseAddress, !source.isEmpty {
                (buffer.baseAddress! + start).copyMemory(from: base, byteCount: source.count)
            }
            offset += source.count
            return UnsafeRawBufferPointer(rebasing: buffer[start..<offset])
        }
        for (index, row) in rows.enumerated() {
            let column = Int32(index * Self.columns)
            insert.bind(row.key, at: column + 1)
            insert.bind(row.millis, at: column + 2)
            insert.bind(blob: row.payload.withUnsafeBytes(place), at: column + 3)
            if let stamp = row.stamp {
                insert.bind(blob: stamp.withBytes(place), at: column + 4)
            } else {
                insert.bindNull(at: column + 4)
            }
            insert.bind(blob: row.hash.withUnsafeBytes(place), at: column + 5)
            if let trace = row.trace {
                insert.bind(text: trace.bytes.withUnsafeBytes(place), at: column + 6)
            } else {
                insert.bindNull(at: column + 6)
            }
            if var origin = row.origin {
                insert.bind(text: origin.withUTF8 { place(UnsafeRawBufferPointer($0)) }, at: column + 7)
            } else {
                insert.bindNull(at: column + 7)
            }
            if let key = row.eventKey {
                insert.bind(text: key.bytes.withUnsafeBytes(place), at: column + 8)
            } else {
                insert.bindNull(at: column + 8)
            }
            if let expiresAt = row.expiresAt {
                insert.bind(expiresAt, at: column + 9)
            } else {
                insert.bindNull(at: column + 9)
            }
        }
        try insert.execute()
    }

    private static let columns = 9
    private static let statements = RowChunks(
        head: "INSERT INTO event_log (key, time, payload, stamp, hash, traceparent, origin, event_key, expires_at) VALUES ", columns: columns)
}
