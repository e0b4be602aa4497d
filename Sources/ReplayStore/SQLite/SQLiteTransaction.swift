import Foundation
import GRDB
import ReplayModel

/// The SQLite side of `LogTransaction`: one process writes the file (`ProcessLock`), so the
/// catalog is the truth and nothing needs locking; events live in `event_log` under one
/// integer key per (stream, seq) (`LogRowKey`).
///
/// The transaction begins (`BEGIN IMMEDIATE`) at the batch's first statement, not before
/// the batch: a batch that needs no statement at all (a group member asking again for
/// work, with none to give, waits in memory) then takes no lock of the WAL's index and
/// commits nothing. In a work queue that was one transaction in three: six `fcntl` calls
/// and SQLite's begin and commit around nothing.
final class SQLiteTransaction: LogTransaction {
    private let connection: Database
    let producers: ProducerTable
    /// What this transaction did to producers besides their states (`ProducerTable`).
    var producerWrites = ProducerTable.Pending()
    /// Whether a statement ran, so the transaction is open and must be committed.
    private(set) var began = false
    /// Events inserted and not yet written (`EventInserts`).
    private var inserts = EventInserts()
    /// The keys of the events inserted, each one's newest, not yet written (`NewestKeys`).
    private var keys = NewestKeys()

    init(_ db: Database, producers: ProducerTable) {
        self.connection = db
        self.producers = producers
    }

    /// The connection, inside the transaction: begun at the first use, with every event
    /// inserted so far written (`inserts`), so that whatever runs next sees them.
    var db: Database {
        get throws {
            try finishWrites()
            try begin()
            return connection
        }
    }

    private func begin() throws {
        guard !began else { return }
        // A cached statement: parsing BEGIN again for every transaction was measurable.
        try connection.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        began = true
    }

    /// One process writes the file (its lock says so): nothing to lock up front.
    static var locksStreamsUpFront: Bool { false }
    static var writesEveryTouchedRow: Bool { false }
    static var readsInPlace: Bool { true }

    func prepare(streams: Set<String>) {}

    func record(_ name: String, cached: Catalog.Record?) -> Catalog.Record? { cached }

    func committedRecord(_ name: String) throws -> Catalog.Record? {
        let row = try Row.fetchOne(
            db, sql: "SELECT s.*, src.name AS fork_source FROM streams s LEFT JOIN streams src ON src.id = s.fork_of WHERE s.name = ?",
            arguments: [name])
        guard let row else { return nil }
        var record = try StreamRow(row: row).record()
        record.derived = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM derivations WHERE stream_id = ?)", arguments: [record.id]) ?? false
        for row in try Row.fetchAll(db, sql: "SELECT * FROM consumers WHERE stream_id = ?", arguments: [record.id]) {
            let consumer = ConsumerInfo(
                name: row["name"], ackedSequence: UInt64(row["acked_seq"] as Int64),
                createdAt: Timestamp.date(millis: row["created_at"]), updatedAt: Timestamp.date(millis: row["updated_at"]))
            record.consumers[consumer.name] = consumer
        }
        record.groups = try Self.groups(of: record.id, db)
        return record
    }

    func insertStream(_ name: String, _ config: StreamConfig, createdAt: String, fork: (StreamFork, sourceID: Int64)?) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO streams (name, capacity, max_bytes, max_age_seconds, created_at,
                                     source_command, source_connect, source_options,
                                     content_type, ttl_seconds, expires_at,
                                     fork_of, fork_seq, fork_offset, fork_sub_offset, keep_unacked, event_ttl_seconds,
                                     compact, tombstone_retention_seconds)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                name, config.capacity, config.maxBytes, config.maxAge, createdAt,
                config.source?.command, config.source?.connect.rawValue, config.source?.options.json,
                config.contentType, config.expiry?.idleSeconds, config.expiry?.deadline.map(Timestamp.millis),
                fork?.sourceID, fork.map { Int64($0.0.sequence) }, fork.map { Int64($0.0.requestedSequence) },
                fork.map { Int64($0.0.requestedSubOffset) }, config.keepUnacked, config.eventTTL,
                config.compaction != nil, config.compaction?.tombstoneRetention,
            ])
        return try db.lastInsertedRowID
    }

    func recordCreator(_ creator: String, of stream: Int64) throws {
        try db.execute(sql: "UPDATE streams SET created_by = ? WHERE id = ?", arguments: [creator, stream])
    }

    func streamsCreated(by creator: String) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM streams WHERE created_by = ? AND deleted_at IS NULL"), arguments: [creator]) ?? 0
    }

    /// A new stream takes the id after the highest in use: refused once that no longer fits
    /// the event key.
    func roomForAStream() throws -> StoreError? {
        let next = try Int64.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(id), 0) + 1 FROM streams")) ?? 1
        guard next > LogRowKey.maxStreamID else { return nil }
        return .limitReached(
            "replay has room for stream ids up to \(LogRowKey.maxStreamID) and the highest is in use; delete the stream with the highest id, or use another database"
        )
    }

    /// The stream's row, once per stream a batch changed: bound in place (`RawStatement`),
    /// the chain hashes from the record's own bytes. Through `StatementArguments` it was
    /// seven allocations a commit (the arguments boxed, then converted, and each hash
    /// copied into an array and then into `Data`), which a one-at-a-time publish pays whole.
    func updateStream(_ record: Catalog.Record) throws {
        let info = record.info
        let update = try RawStatement(
            db.cachedStatement(
                sql: """
                    UPDATE streams SET first_seq = ?, last_seq = ?, event_count = ?, byte_count = ?,
                        terminal = ?, terminal_message = ?, terminal_at = ?, last_time = ?, writer_seq = ?,
                        deleted_at = ?, chain_head = ?, chain_base = ?, scheduled_count = ?, next_due = ?,
                        removed_events = ?, removed_through = ?, compacted_at = ?, compacted_events = ?
                    WHERE id = ?
                    """), in: db)
        update.bind(Int64(info.firstSequence), at: 1)
        update.bind(Int64(info.lastSequence), at: 2)
        update.bind(Int64(info.eventCount), at: 3)
        update.bind(Int64(info.byteCount), at: 4)
        update.bind(info.terminal?.kind, at: 5)
        update.bind(info.terminal?.message, at: 6)
        update.bind(info.terminalAt.map(Timestamp.format), at: 7)
        update.bind(record.lastTime, at: 8)
        update.bind(info.writerSequence, at: 9)
        update.bind(info.deletedAt.map(Timestamp.format), at: 10)
        update.bind(Int64(info.scheduledCount), at: 13)
        update.bind(info.nextDue, at: 14)
        update.bind(Int64(info.removedEvents), at: 15)
        update.bind(Int64(info.removedThrough), at: 16)
        update.bind(info.compactedAt, at: 17)
        update.bind(Int64(info.compactedEvents), at: 18)
        update.bind(record.id, at: 19)
        try update.withBound(hash: record.chainHead, at: 11) {
            try update.withBound(hash: record.chainBase, at: 12) { try update.execute() }
        }
    }

    /// A chain hash as its column holds it: NULL for none.
    static func column(_ hash: EventHash) -> Data? {
        hash == .zero ? nil : Data(hash.bytes)
    }

    func deleteStream(_ id: Int64) throws {
        producers.streamDeleted(id, &producerWrites)
        try db.execute(sql: "DELETE FROM streams WHERE id = ?", arguments: [id])
    }

    func insertEvent(
        stream: Int64, sequence: UInt64, millis: Int64, payload: Data, stamp: ProducerStamp?, origin: String?, trace: TraceParent?,
        key: EventKey?, expiresAt: Int64?, hash: EventHash
    ) throws {
        let row = EventInserts.Row(
            key: LogRowKey.key(stream: stream, sequence: sequence), millis: millis, payload: payload,
            stamp: try stamp.map { try self.stamp($0, stream: stream) }, hash: hash, trace: trace, origin: origin, eventKey: key,
            expiresAt: expiresAt)
        if let key { keys.add(key, stream: stream, sequence: sequence) }
        if inserts.add(row) { try writeInserts() }
    }

    /// Writes the events waiting in `inserts` (in the transaction, begun if it was not).
    private func writeInserts() throws {
        try begin()
        try inserts.write(connection)
    }

    /// Every event of the batch written: before its COMMIT.
    func finishWrites() throws {
        if !inserts.isEmpty { try writeInserts() }
        if !keys.isEmpty {
            try begin()
            try keys.write(connection)
        }
    }

    func eventHash(stream: Int64, sequence: UInt64) throws -> EventHash? {
        try Self.storedHash(stream: stream, sequence: sequence, db)
    }

    /// The hash row `sequence` of `stream` holds (`.zero` if it was stored before chaining
    /// began); `nil` if there is no such row.
    static func storedHash(stream: Int64, sequence: UInt64, _ db: Database) throws -> EventHash? {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT hash FROM event_log WHERE key = ?"), arguments: [LogRowKey.key(stream: stream, sequence: sequence)])
        return row.map { StreamRow.hash($0[0]) }
    }

    /// What this snapshot holds before `segment`'s first event `sequence`: its predecessor's
    /// hash if that row is the segment stream's own, or the hash a hole ending just before
    /// it kept (`EventHoles`), else the stream's chain base (`known`, where the caller has
    /// it, else the row's).
    static func hashBefore(_ segment: LogSegments.Segment, _ sequence: UInt64, _ db: Database, known: EventHash? = nil) throws -> EventHash {
        if sequence > 1, let stored = try storedHash(stream: segment.streamID, sequence: sequence - 1, db) { return stored }
        if sequence > 1, let hole = try EventHoles.hole(of: segment.streamID, endingAt: sequence - 1, db) { return hole.hash }
        if let known { return known }
        let base = try Data?.fetchOne(db.cachedStatement(sql: "SELECT chain_base FROM streams WHERE id = ?"), arguments: [segment.streamID])
        return StreamRow.hash(base ?? nil)
    }

    /// The last producer stamped, and its number: a socket producer's pipelined PUBs come
    /// in runs, and hashing its id for every event was measurable.
    private var lastStamped: (key: ProducerKey, ref: Int64)?

    private func stamp(_ stamp: ProducerStamp, stream: Int64) throws -> EventStamp {
        let key = ProducerKey(stream: stream, producer: stamp.id)
        let ref: Int64
        if let last = lastStamped, last.key == key {
            ref = last.ref
        } else {
            ref = try producers.ref(key, &producerWrites, db)
            lastStamped = (key, ref)
        }
        return EventStamp(ref: ref, epoch: stamp.epoch, pseq: stamp.sequence)
    }

    func publishedWithoutEvent(_ key: ProducerKey) {
        producers.publishedWithoutEvent(key, &producerWrites)
    }

    func deleteEvents(of stream: Int64) throws {
        try producers.eventsWillGo(of: stream, through: LogRowKey.maxSequence, &producerWrites, db)
        let range = LogRowKey.range(of: stream)
        try db.execute(sql: "DELETE FROM event_log WHERE key BETWEEN ? AND ?", arguments: [range.lowerBound, range.upperBound])
        try db.execute(sql: "DELETE FROM event_keys WHERE stream_id = ?", arguments: [stream])
        try db.execute(sql: "DELETE FROM event_holes WHERE stream_id = ?", arguments: [stream])
    }

    func removeEvents(of stream: Int64, from: UInt64, through: UInt64) throws -> (events: Int, bytes: Int) {
        try producers.eventsWillGo(of: stream, through: through, &producerWrites, db)
        let range = [LogRowKey.key(stream: stream, sequence: from), LogRowKey.key(stream: stream, sequence: through)]
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT count(*), coalesce(sum(length(payload)), 0), coalesce(max(event_key IS NOT NULL), 0), min(key), max(key)
                        FROM event_log WHERE key BETWEEN ? AND ?
                        """),
                arguments: StatementArguments(range)),
            let lowest = row[3] as Int64?, let highest = row[4] as Int64?
        else { return (0, 0) }
        let (events, bytes, keyed): (Int, Int, Bool) = (row[0], row[1], row[2])
        let (first, newest) = (LogRowKey.sequence(of: lowest), LogRowKey.sequence(of: highest))
        let last = (sequence: newest, hash: try eventHash(stream: stream, sequence: newest) ?? .zero)
        try deleteRange(range)
        // A key whose newest event went falls back to its newest before the range, found
        // by reading the stream back from there (to the key's previous event), or loses
        // its row if it has none.
        if keyed {
            let range = LogRowKey.range(of: stream)
            try db.cachedStatement(
                sql: """
                    UPDATE event_keys SET seq = coalesce((SELECT key - ? FROM event_log
                        WHERE key BETWEEN ? AND ? AND event_log.event_key = event_keys.event_key ORDER BY key DESC LIMIT 1), 0)
                    WHERE stream_id = ? AND seq BETWEEN ? AND ?
                    """
            ).execute(arguments: [range.lowerBound, range.lowerBound, LogRowKey.key(stream: stream, sequence: from) - 1, stream, Int64(from), Int64(through)])
            try db.cachedStatement(sql: "DELETE FROM event_keys WHERE stream_id = ? AND seq = 0").execute(arguments: [stream])
        }
        let neighbours = try EventHoles.neighbours(of: stream, from: from, through: through, db)
        try EventHoles.write(EventHole.merging(first: first, last: last, neighbours: neighbours), replacing: neighbours, stream: stream, db)
        return (events, bytes)
    }

    func hole(of stream: Int64, containing sequence: UInt64) throws -> EventHole? {
        try EventHoles.hole(of: stream, containing: sequence, db)
    }

    /// The keys from the expiry index, and each stream's name once: a join named the
    /// stream of every event, a lookup each.
    func expiredEvents(by millis: Int64, limit: Int, streams: [String]?) throws -> [(stream: String, sequence: UInt64)] {
        let keys = try Int64.fetchAll(
            db.cachedStatement(sql: "SELECT key FROM event_log WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?"),
            arguments: [millis, limit])
        let name = try db.cachedStatement(sql: "SELECT name FROM streams WHERE id = ?")
        var names: [Int64: String] = [:]
        var expired: [(stream: String, sequence: UInt64)] = []
        expired.reserveCapacity(keys.count)
        for key in keys {
            let id = LogRowKey.stream(of: key)
            if names[id] == nil { names[id] = try String.fetchOne(name, arguments: [id]) ?? "" }
            expired.append((names[id]!, LogRowKey.sequence(of: key)))
        }
        return expired
    }

    /// One writer: nothing to lock.
    func streamsWithExpiredEvents(by millis: Int64, limit: Int) throws -> [String] { [] }

    func dropHoles(of stream: Int64, through: UInt64) throws -> Int {
        try EventHoles.drop(of: stream, through: through, db)
    }

    func deleteEvents(of stream: Int64, from: UInt64, through: UInt64) throws -> Int {
        try producers.eventsWillGo(of: stream, through: through, &producerWrites, db)
        let range = [LogRowKey.key(stream: stream, sequence: from), LogRowKey.key(stream: stream, sequence: through)]
        let row = try Row.fetchOne(
            db.cachedStatement(
                sql: "SELECT coalesce(sum(length(payload)), 0), coalesce(max(event_key IS NOT NULL), 0) FROM event_log WHERE key BETWEEN ? AND ?"),
            arguments: StatementArguments(range))
        let (freed, keyed): (Int, Bool) = (row?[0] ?? 0, row?[1] ?? false)
        try deleteRange(range)
        // Keys whose newest event went with them: a stream without keys asks nothing more.
        if keyed {
            try db.cachedStatement(sql: "DELETE FROM event_keys WHERE stream_id = ? AND seq BETWEEN ? AND ?").execute(arguments: [
                stream, Int64(from), Int64(through),
            ])
        }
        return freed
    }

    /// Deletes the rows of a key range, after the caller read what it needs of them.
    /// A plain `DELETE`, not `DELETE … RETURNING`: SQLite runs `RETURNING` as a trigger,
    /// which turns off its one-pass delete, so each row was looked up again and handed to
    /// a trigger program. Reading the sums first and then deleting took 0.95 µs a row
    /// against 2.2 (200,000 rows of a capped stream, `sqlite3` with `.timer on`).
    private func deleteRange(_ range: [Int64]) throws {
        try db.cachedStatement(sql: "DELETE FROM event_log WHERE key BETWEEN ? AND ?").execute(arguments: StatementArguments(range))
    }

    func walkPayloadSizes(of stream: Int64, from: UInt64, _ body: (UInt64, Int) -> Bool) throws {
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT key, length(payload) FROM event_log WHERE key BETWEEN ? AND ? ORDER BY key"),
            arguments: [LogRowKey.key(stream: stream, sequence: from), LogRowKey.range(of: stream).upperBound])
        while let row = try rows.next(), body(LogRowKey.sequence(of: row[0]), row[1]) {}
    }

    func firstSequence(of stream: Int64, in window: ClosedRange<UInt64>, atOrAfter millis: Int64) throws -> UInt64 {
        try Self.firstSequence(of: stream, in: window, atOrAfter: millis, db)
    }

    static func firstSequence(of stream: Int64, in window: ClosedRange<UInt64>, atOrAfter millis: Int64, _ db: Database) throws -> UInt64 {
        let lookup = try db.cachedStatement(sql: "SELECT key, time FROM event_log WHERE key BETWEEN ? AND ? ORDER BY key LIMIT 1")
        let end = LogRowKey.key(stream: stream, sequence: window.upperBound)
        return try TimeSearch.firstSequence(in: window, atOrAfter: millis) { sequence in
            try Row.fetchOne(lookup, arguments: [LogRowKey.key(stream: stream, sequence: sequence), end]).map {
                (LogRowKey.sequence(of: $0[0]), $0[1])
            }
        }
    }

    func forEachEvent(_ segments: LogSegments, limit: Int, byteBudget: Int, expiredBy: Int64, _ body: EventVisitor) throws {
        // Inside the writer's transaction the working records are current: a retention
        // earlier in this batch moved the base in the record, not yet in the row.
        try Self.forEachEvent(
            segments, limit: limit, byteBudget: byteBudget, expiredBy: expiredBy, db,
            base: { segment, sequence, db in try Self.hashBefore(segment, sequence, db, known: segment.base) },
            body)
    }

    /// Where a read's check of a segment starts (see `hashBefore`).
    typealias ChainStart = (_ segment: LogSegments.Segment, _ first: UInt64, _ db: Database) throws -> EventHash

    /// Visits up to `limit` events, oldest first, stopping after the event that reaches
    /// `byteBudget` payload bytes, or before a hole (events removed from inside the window:
    /// a reader reports the hole as a gap before reading on, from the event after it); the
    /// time, payload and trace context are SQLite's buffers, valid only during the call.
    /// Each event's hash is checked against its chain first (`ChainCheck`): a corrupt one
    /// ends the read with `corruptEvent`, and is never handed on. An event expired by
    /// `expiredBy` (ms) is not read, and ends the read as a hole does.
    static func forEachEvent(
        _ segments: LogSegments, limit: Int, byteBudget: Int, expiredBy: Int64, _ db: Database,
        base: ChainStart = { try hashBefore($0, $1, $2) },
        _ body: EventVisitor
    ) throws {
        var remaining = limit
        var bytes = 0
        // Events of one commit share its time: format each distinct time once.
        var time: (millis: Int64, text: [UInt8]) = (.min, [])
        /// The sequence number the next event must have to follow the last one handed on.
        var expected: UInt64?
        var atHole = false
        for segment in segments.segments where remaining > 0 && bytes < byteBudget && !atHole {
            let statement = RawStatement(
                try db.cachedStatement(
                    sql: """
                        SELECT key, time, payload, traceparent, hash, event_key FROM event_log
                        WHERE key BETWEEN ? AND ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY key LIMIT ?
                        """),
                in: db)
            statement.bind(LogRowKey.key(stream: segment.streamID, sequence: segment.from), at: 1)
            statement.bind(LogRowKey.key(stream: segment.streamID, sequence: segment.through), at: 2)
            statement.bind(expiredBy, at: 3)
            statement.bind(Int64(remaining), at: 4)
            var chain = ChainCheck(stream: segment.stream)
            var failure: Error?
            try statement.forEachRow { row in
                let sequence = LogRowKey.sequence(of: row.int64(0))
                if let next = expected, sequence != next {
                    atHole = true
                    return false
                }
                let millis = row.int64(1)
                let payload = row.bytes(2)
                let hash = row.optionalBytes(4)
                let key = row.optionalBytes(5)
                do {
                    if !chain.started { chain.start(after: try base(segment, sequence, db)) }
                    try chain.check(sequence: sequence, millis: millis, key: key, payload: payload, stored: hash)
                } catch {
                    failure = error
                    return false
                }
                if millis != time.millis { time = (millis, Array(Timestamp.format(millis: millis).utf8)) }
                time.text.withUnsafeBytes { text in
                    body(sequence, text, payload, row.optionalBytes(3), hash, key)
                }
                remaining -= 1
                bytes += payload.count
                expected = sequence + 1
                return bytes < byteBudget && remaining > 0
            }
            if let failure { throw failure }
        }
    }

    func writeConsumer(stream: Int64, _ consumer: ConsumerInfo) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO consumers (stream_id, name, acked_seq, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (stream_id, name) DO UPDATE SET acked_seq = excluded.acked_seq, updated_at = excluded.updated_at
                """
        ).execute(arguments: [
            stream, consumer.name, Int64(consumer.ackedSequence), Timestamp.millis(consumer.createdAt), Timestamp.millis(consumer.updatedAt),
        ])
    }

    func deleteConsumer(stream: Int64, name: String) throws {
        try db.execute(sql: "DELETE FROM consumers WHERE stream_id = ? AND name = ?", arguments: [stream, name])
    }

    func producerState(_ key: ProducerKey) throws -> ProducerState? { try producers.state(key, &producerWrites, db) }

    func writeProducers(_ changes: [ProducerKey: ProducerState], millis: Int64) throws {
        try producers.write(changes, millis: millis, &producerWrites, db)
    }

    func expireProducers(before millis: Int64) throws { try producers.expire(before: millis, &producerWrites, db) }

    func savepoint() throws { try db.execute(sql: "SAVEPOINT atomic_send") }
    func rollbackToSavepoint() throws { try db.execute(sql: "ROLLBACK TO atomic_send; RELEASE atomic_send") }
    func releaseSavepoint() throws { try db.execute(sql: "RELEASE atomic_send") }
}
