import Foundation
import GRDB
import ReplayModel

/// Streams in one SQLite file: the embedded default. One process writes it (`ProcessLock`);
/// reads run on a pool of WAL readers and never block the writer, and the `sqlite3` shell
/// can read the file while the store is open.
final class SQLiteLog: LogDatabase {
    let path: String
    let pool: DatabasePool
    let catalog: Catalog
    private let lock: ProcessLock
    /// Checkpoints the WAL in the writer's commits, paced by what each costs (`WALCheckpoints`).
    private let checkpoints = WALCheckpoints()
    /// Reads in flight: the close waits for them (`ReadGate`).
    private let readGate = ReadGate()
    private let listeners: CommitListeners
    private let producers = ProducerTable()
    private let waiting: WaitingMembers
    private let alarm: ScheduledAlarm
    private let now: @Sendable () -> Date
    /// How an append's unknown stream is created (`EventStore.Options.autoCreate`).
    private let autoCreate: StreamConfig?

    /// The WAL file's size, kept between runs (`WALFile`).
    static let walBytes = WALFile.workingSize(checkpointPages: CheckpointPacing.mostPages)

    init(path: String, options: EventStore.Options, listeners: CommitListeners, now: @escaping @Sendable () -> Date) throws(StoreError) {
        self.path = path
        self.listeners = listeners
        self.now = now
        autoCreate = options.autoCreate
        waiting = WaitingMembers(now: now)
        alarm = ScheduledAlarm(now: now)
        try Self.checkWritable(path)
        lock = try ProcessLock(databasePath: path)

        var configuration = Configuration()
        configuration.label = "replay"
        configuration.maximumReaderCount = max(1, options.readerCount)
        configuration.busyMode = .timeout(5)
        let synchronous = options.durability == .full ? "FULL" : "NORMAL"
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
            WALFile.keepOnClose(db)
        }
        let checkpoints = self.checkpoints
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // Again on the writer, where it counts: GRDB's pool turns WAL mode on after
            // `prepareDatabase` and sets `synchronous = NORMAL` with it, so a FULL asked
            // above held on the readers only, and commits were not fsynced.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
                checkpoints.install(on: db)
            }
            let unknown = try pool.read { db in try Migrations.unknownMigrations(in: db) }
            guard unknown.isEmpty else { throw StoreError.newerSchema(path: path, unknownMigrations: unknown) }
            try Migrations.migrator().migrate(pool)
            try pool.write { db in try SQLiteTransaction.moveHeldFirstDeliveriesToRuns(db) }
            try pool.writeWithoutTransaction { db in try WALFile.reserve(db, path: path, bytes: Self.walBytes) }
            catalog = try pool.read { db in try Catalog(loadingFrom: db) }
        } catch {
            lock.release()
            throw StoreError(error, path: path)
        }
    }

    /// SQLite's own messages for a read-only file come late and vaguely; say it up front.
    private static func checkWritable(_ path: String) throws(StoreError) {
        let folder = (path as NSString).deletingLastPathComponent
        if FileManager.default.fileExists(atPath: path) {
            guard access(path, W_OK) == 0 else { throw .readOnly(path: path) }
        }
        guard access(folder.isEmpty ? "." : folder, W_OK) == 0 else { throw .readOnly(path: path) }
    }

    func commit(_ batch: [WriteRequest]) {
        let started = ContinuousClock.now
        var committed: WriterRules<SQLiteTransaction>?
        var producerWrites = ProducerTable.Pending()
        do {
            try pool.writeWithoutTransaction { db in
                do {
                    // The transaction begins at the batch's first statement (`SQLiteTransaction.db`),
                    // so it is committed only if one ran. COMMIT is a cached statement, as BEGIN
                    // is there: GRDB's `inTransaction` parses both again for every transaction.
                    let transaction = SQLiteTransaction(db, producers: producers)
                    var rules = WriterRules(
                        catalog: catalog, db: transaction, time: now(), autoCreate: autoCreate, producerExpiry: producers.expiry,
                        waiting: waiting, alarm: alarm)
                    try rules.run(batch)
                    try transaction.finishWrites()
                    if transaction.began { try db.cachedStatement(sql: "COMMIT TRANSACTION").execute() }
                    producerWrites = transaction.producerWrites
                    committed = consume rules  // moved: a copy retained and released every field of the batch's state
                } catch {
                    // A failed statement, or a COMMIT that could not write (a full disk):
                    // nothing of the batch stays.
                    if db.isInsideTransaction { try? db.rollback() }
                    throw error
                }
            }
        } catch {
            return WriterRules<SQLiteTransaction>.failed(batch, StoreError(error, path: path), waiting: waiting)
        }
        guard let committed else { return }
        producers.apply(committed.producerChanges, producerWrites, millis: committed.millis)
        committed.committed(batch, started: started, listeners: listeners)
    }

    /// A read on one of the pool's connections, unless the store is closing: then it is
    /// refused as GRDB refuses a read of a closed pool.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        guard let result = try readGate.pass({ () throws -> T in try pool.read(body) }) else { throw Self.closedError }
        return result
    }

    /// What a read after the close is refused with: what GRDB answers once its pool is closed.
    private static var closedError: DatabaseError { DatabaseError(resultCode: .SQLITE_MISUSE, message: "Connection is closed") }

    /// Each SQLite transaction ends with its batch: nothing is left open.
    func writerIdle() {}

    func forEachEvent(
        _ segments: LogSegments, limit: Int, byteBudget: Int, includingExpired: Bool,
        _ body: EventVisitor
    ) throws(StoreError) {
        let expiredBy = includingExpired ? Int64.min : Timestamp.millis(now())
        do {
            try read { db in
                try SQLiteTransaction.forEachEvent(segments, limit: limit, byteBudget: byteBudget, expiredBy: expiredBy, db, body)
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func latestEvent(withKey key: EventKey, in segments: LogSegments) throws(StoreError) -> StoredEvent? {
        let expiredBy = Timestamp.millis(now())
        do {
            // The lookup and the read in one read transaction: the event found is the one read.
            return try read { db in
                for segment in segments.segments.reversed() {
                    guard let sequence = try Self.newestEvent(of: key.text, in: segment, db) else { continue }
                    var found: StoredEvent?
                    try SQLiteTransaction.forEachEvent(.single(sequence, of: segment), limit: 1, byteBudget: .max, expiredBy: expiredBy, db) {
                        sequence, time, payload, trace, hash, key in
                        found = StoredEvent(sequence: sequence, time: time, payload: payload, traceParent: trace, hash: hash, key: key)
                    }
                    return found
                }
                return nil
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// The newest event of `key` in `segment`: its row in `event_keys` when that is inside
    /// the segment; walked back to from the segment's end when the key has a newer event
    /// past it (see `walkBack`); `nil` when its newest is older than the segment.
    private static func newestEvent(of key: String, in segment: LogSegments.Segment, _ db: Database) throws -> UInt64? {
        let row = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT seq FROM event_keys WHERE stream_id = ? AND event_key = ?"), arguments: [segment.streamID, key])
        guard let newest = row.map(UInt64.init), newest >= segment.from else { return nil }
        return newest <= segment.through ? newest : try walkBack(to: key, in: segment, db)?.sequence
    }

    /// The newest event of `key` in `segment` and its payload's size, found by reading the
    /// segment backwards from its end. Only for a key with a newer event past the segment:
    /// a fork's source went on after the fork point, or the writer past a reader's point,
    /// where the key's event before is usually a few events back.
    private static func walkBack(to key: String, in segment: LogSegments.Segment, _ db: Database) throws -> (sequence: UInt64, bytes: Int)? {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT key, length(payload) FROM event_log WHERE key BETWEEN ? AND ? AND event_key = ? ORDER BY key DESC LIMIT 1"),
            arguments: [
                LogRowKey.key(stream: segment.streamID, sequence: segment.from), LogRowKey.key(stream: segment.streamID, sequence: segment.through), key,
            ])
        return row.map { (LogRowKey.sequence(of: $0[0]), $0[1]) }
    }

    func currentEvents(in segments: LogSegments, limit: Int) throws(StoreError) -> [UInt64] {
        do {
            return try read { db in
                // Every key whose newest event is in the segment or after it: the keys'
                // rows, one index range of the stream's.
                let keys = try db.cachedStatement(
                    sql: """
                        SELECT event_key, seq, (SELECT length(payload) FROM event_log WHERE key = (stream_id << 40) | seq)
                        FROM event_keys WHERE stream_id = ? AND seq >= ? LIMIT ?
                        """)
                var current = CurrentEvents()
                for segment in segments.segments.reversed() {
                    let rows = try Row.fetchCursor(keys, arguments: [segment.streamID, Int64(segment.from), Int64(clamping: limit)])
                    var past: [String] = []
                    while let row = try rows.next() {
                        let sequence = UInt64(row[1] as Int64)
                        guard sequence <= segment.through else {
                            past.append(row[0])
                            continue
                        }
                        current.add(key: row[0], sequence: sequence, payloadBytes: row[2] ?? 0)
                    }
                    for key in past {
                        guard let (sequence, bytes) = try Self.walkBack(to: key, in: segment, db) else { continue }
                        current.add(key: key, sequence: sequence, payloadBytes: bytes)
                    }
                }
                return current.ordered
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func forEachEvent(eachOf reads: [LogSegments], byteBudget: Int, _ body: EventVisitor) throws(StoreError) -> Int {
        let expiredBy = Timestamp.millis(now())
        do {
            return try read { db in
                try LogSegments.readEach(reads, byteBudget: byteBudget, body) { read, visit in
                    try SQLiteTransaction.forEachEvent(read, limit: .max, byteBudget: .max, expiredBy: expiredBy, db, visit)
                }
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func subscriptions(id: String?) throws(StoreError) -> [SubscriptionRow] {
        do {
            return try read { db in try SQLiteTransaction.subscriptions(id: id, db) }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func scheduledEvents(of stream: Int64, name: String, limit: Int) throws(StoreError) -> [ScheduledEvent] {
        do {
            return try read { db in try SQLiteTransaction.scheduledEvents(of: stream, name: name, limit: limit, db) }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func lastSourceTick(of stream: Int64) throws(StoreError) -> Int64? {
        do {
            return try read { db in try SQLiteTransaction.lastSourceTick(of: stream, db) }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func derivations() throws(StoreError) -> [Derivation] {
        do {
            return try read { db in try SQLiteTransaction.derivations(db) }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func firstSequence(of record: Catalog.Record, atOrAfter millis: Int64) throws(StoreError) -> UInt64 {
        do {
            return try read { db in
                // The window as of this read (the writer may have moved it since the
                // catalog snapshot; the search is over what this read sees).
                let bounds = try Row.fetchOne(db, sql: "SELECT first_seq, last_seq FROM streams WHERE id = ?", arguments: [record.id])
                let first = UInt64(bounds?["first_seq"] as Int64? ?? Int64(record.info.firstSequence))
                let last = UInt64(bounds?["last_seq"] as Int64? ?? Int64(record.info.lastSequence))
                guard first <= last else { return last + 1 }
                return try SQLiteTransaction.firstSequence(of: record.id, in: first...last, atOrAfter: millis, db)
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func compactionRows(of stream: Int64, from: UInt64, through: UInt64, limit: Int) throws(StoreError) -> [CompactionRow] {
        do {
            return try read { db in try Self.compactionRows(of: stream, from: from, through: through, limit: limit, db) }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// The key's newest event from its row in `event_keys` (exact for the stream's own
    /// events, as the writer keeps it), joined in: one lookup per event inside SQLite, where one statement
    /// per key took two thirds of a batch's time.
    static func compactionRows(of stream: Int64, from: UInt64, through: UInt64, limit: Int, _ db: Database) throws -> [CompactionRow] {
        let select = try RawStatement(
            db.cachedStatement(
                sql: """
                    SELECT e.key, e.event_key, length(e.payload), e.time, k.seq
                    FROM event_log AS e LEFT JOIN event_keys AS k ON k.stream_id = ? AND k.event_key = e.event_key
                    WHERE e.key BETWEEN ? AND ? ORDER BY e.key LIMIT ?
                    """),
            in: db)
        select.bind(stream, at: 1)
        select.bind(LogRowKey.key(stream: stream, sequence: from), at: 2)
        select.bind(LogRowKey.key(stream: stream, sequence: through), at: 3)
        select.bind(Int64(limit), at: 4)
        var rows: [CompactionRow] = []
        rows.reserveCapacity(limit)
        try select.forEachRow { row in
            rows.append(
                CompactionRow(
                    sequence: LogRowKey.sequence(of: row.int64(0)), newest: row.optionalBytes(1) == nil ? nil : row.optionalInt64(4).map(UInt64.init),
                    size: Int(row.int64(2)), millis: row.int64(3)))
            return true
        }
        return rows
    }

    func nextExpiry() throws(StoreError) -> Int64? {
        do {
            return try read { db in
                try Int64.fetchOne(db.cachedStatement(sql: "SELECT min(expires_at) FROM event_log WHERE expires_at IS NOT NULL"))
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    func hole(of stream: Int64, containing sequence: UInt64) throws(StoreError) -> EventHole? {
        do {
            return try read { db in try EventHoles.hole(of: stream, containing: sequence, db) }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// One daemon per file (`ProcessLock`): no other daemon's commits to follow; only the
    /// waiting group members' alarm and the scheduled events' ask the writer for work.
    func start(writer: WriteQueue) {
        waiting.start(writer: writer)
        alarm.start(writer: writer)
    }

    func backup(to path: String) throws(StoreError) -> [(stream: String, lastSequence: UInt64)] {
        guard let copied = try readGate.pass({ () throws(StoreError) in try OnlineBackup.copy(pool, to: path) }) else {
            throw StoreError(Self.closedError, path: self.path)
        }
        return copied
    }

    /// One daemon per file (`ProcessLock`): its sources are its own.
    func claimSource(_ stream: String) -> Bool { true }
    func releaseSource(_ stream: String) {}
    func holdsSource(_ stream: String) -> Bool { true }
    var isShared: Bool { false }

    /// Writes the producers' rows that are behind the log, checkpoints the WAL into the
    /// database file and starts it over for the next start
    /// (`WALFile`), closes the file and releases it for another process (or another store
    /// in this one).
    func close() {
        readGate.close()
        waiting.close()
        alarm.close()
        // The writer has stopped (`EventStore.close`): its thread's tables are this one's.
        _ = try? pool.write { db in try producers.writeBehind(db) }
        _ = try? pool.writeWithoutTransaction { db in try WALFile.restartForNextStart(db, path: path, bytes: Self.walBytes) }
        _ = try? pool.close()
        lock.release()
    }
}
