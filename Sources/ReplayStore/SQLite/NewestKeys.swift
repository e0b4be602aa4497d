import GRDB
import ReplayModel

/// Each key's newest event as a batch leaves it, written to `event_keys` once per key
/// before the batch's other statements and its commit (with the events, see
/// `SQLiteTransaction.finishWrites`).
///
/// Once per key, not per event: a catch-up's batch of 4,096 keyed events over 1,000 keys
/// sets 1,000 rows. Written as the events are, up to 32 rows a statement, each key's bytes
/// bound in place from one buffer (`EventInserts` says why).
struct NewestKeys {
    private struct Key: Hashable {
        let stream: Int64
        let key: EventKey
    }

    private var newest: [Key: UInt64] = [:]

    var isEmpty: Bool { newest.isEmpty }

    /// Event `sequence` of `stream` has `key`; events come in sequence order.
    mutating func add(_ key: EventKey, stream: Int64, sequence: UInt64) {
        newest[Key(stream: stream, key: key)] = sequence
    }

    /// Writes every key's row and forgets them.
    mutating func write(_ db: Database) throws {
        let rows = Array(newest)
        newest.removeAll(keepingCapacity: true)
        try RowChunks.forEach(rows) { try Self.write($0, db) }
    }

    private static func write(_ rows: ArraySlice<(key: Key, value: UInt64)>, _ db: Database) throws {
        let upsert = try RawStatement(db.cachedStatement(sql: statements.sql(rows: rows.count)), in: db)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(rows.reduce(0) { $0 + $1.key.key.bytes.count }, 1), alignment: 1)
        defer { buffer.deallocate() }
        var offset = 0
        for (index, row) in rows.enumerated() {
            let column = Int32(index * 3)
            let count = row.key.key.bytes.count
            row.key.key.bytes.withUnsafeBytes { (buffer.baseAddress! + offset).copyMemory(from: $0.baseAddress!, byteCount: count) }
            upsert.bind(row.key.stream, at: column + 1)
            upsert.bind(text: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count]), at: column + 2)
            upsert.bind(Int64(row.value), at: column + 3)
            offset += count
        }
        try upsert.execute()
    }

    /// `max`: a row never goes back, whatever order the batch's keys are written in.
    private static let statements = RowChunks(
        head: "INSERT INTO event_keys (stream_id, event_key, seq) VALUES ", columns: 3,
        tail: " ON CONFLICT (stream_id, event_key) DO UPDATE SET seq = max(seq, excluded.seq)")
}
