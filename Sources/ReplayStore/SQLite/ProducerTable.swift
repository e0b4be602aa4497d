import GRDB
import ReplayModel

/// The SQLite writer's producer states: a cache of the `producers` rows, and the rule for
/// when those rows are written.
///
/// **Written behind the log.** Each accepted publish stamps its first event with the
/// producer's number, epoch and pseq (`EventStamp`), in the same row and transaction as
/// the event. A producer's row is then written at most a second later (`writeBehindMillis`),
/// together with every other row of its stream that is behind, and `producer_snapshots`
/// records the stream's last event at that moment: every stamp up to it is in the rows. A
/// producer's state is therefore its row plus the stamps after its stream's snapshot,
/// which is what a load reads (`state`), after a restart or a crash as after a failed batch.
/// Writing the row with every batch was one UPDATE and one more page in the WAL per
/// producer per commit, most of what idempotent appends cost beyond plain ones
/// (docs/PERFORMANCE.md); Kafka keeps producer state the same way.
///
/// A row is written at once, in the batch that changes it, where the log cannot carry
/// the change: a producer's first publish (its row gives it its number), a publish that
/// stored no event (a close, a stream of capacity 0), events removed past the snapshot
/// (a trim, a reset: their stamps would be gone), and before idle producers are expired.
///
/// With one writer per file the cache cannot go stale. Only the writer's thread touches it
/// (`@unchecked Sendable`: the writer's queue is its lock).
final class ProducerTable: @unchecked Sendable {
    private enum Entry {
        /// Known to have no row.
        case absent
        case stored(ProducerState, ref: Int64)
        /// Has a row, whose state a transaction took (`state`): it comes back with the
        /// commit (`apply`); after a failed one it is read again when next asked for.
        case lent(ref: Int64)
    }

    /// What one transaction did to producers besides their states: given back to `apply`
    /// after its commit, dropped with it after a failure.
    struct Pending {
        /// Numbers given in this transaction, and those of the rows it loaded.
        fileprivate var refs: [ProducerKey: Int64] = [:]
        /// States loaded to be written, though the batch did not change them.
        fileprivate var loaded: [ProducerKey: ProducerState] = [:]
        /// Streams whose producers must all be written in this transaction.
        fileprivate var mustWrite: Set<Int64> = []
        fileprivate var deletedStreams: Set<Int64> = []
        /// Whether idle producers were expired (the cache is then dropped).
        fileprivate var expired = false
        /// Streams whose rows were written (their snapshot moved).
        fileprivate var written: Set<Int64> = []
    }

    /// How long a changed producer's row may stay behind the log: at most this much of a
    /// stream's events is read back to load one of its producers after a crash.
    static let writeBehindMillis: Int64 = 1_000

    private var states: [ProducerKey: Entry] = [:]
    /// Producers whose rows are behind the log, by stream, with when the oldest changed (ms).
    private var behind: [Int64: (keys: Set<ProducerKey>, since: Int64)] = [:]
    /// Each stream's snapshot (`producer_snapshots.through_seq`) as last read or written;
    /// `nil` inside: the stream has none.
    private var snapshots: [Int64: Int64?] = [:]
    /// Streams whose rows this process has written since it opened the file: of those,
    /// only the rows in `behind` can be behind the log.
    private var settled: Set<Int64> = []
    /// The highest producer number given (read from the file at first need).
    private var lastRef: Int64?
    let expiry = ProducerExpiry()

    // MARK: Loading

    /// The producer's state, for the transaction to change. The cache lends it rather than
    /// share it: a shared copy's runs were copied whole by the first change to them, for
    /// every producer's publish.
    ///
    /// `connection` is asked for only when a statement runs: asking begins the transaction
    /// (`SQLiteTransaction.db`), and a state the cache holds needs none.
    func state(_ key: ProducerKey, _ pending: inout Pending, _ connection: @autoclosure () throws -> Database) throws -> ProducerState? {
        switch states[key] {
        case .absent?: return nil
        case .stored(let state, let ref)?:
            states[key] = .lent(ref: ref)
            pending.refs[key] = ref
            return state
        case .lent?, nil: break
        }
        let db = try connection()
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT epoch, last_pseq, runs, runs_format, updated_at, ref FROM producers WHERE stream_id = ? AND producer = ?"),
            arguments: [key.stream, key.producer])
        guard let row else {
            states[key] = .absent
            return nil
        }
        var state = ProducerState(
            epoch: UInt64(row["epoch"] as Int64), lastPseq: UInt64(row["last_pseq"] as Int64),
            runs: (ProducerRunsFormat(rawValue: row["runs_format"] as Int64) ?? .triples).unpack(row["runs"]), updatedAt: row["updated_at"])
        let ref: Int64 = row["ref"]
        try readStamps(after: snapshot(of: key.stream, db), into: &state, key, ref: ref, db)
        states[key] = .lent(ref: ref)
        pending.refs[key] = ref
        return state
    }

    /// Applies the stamps of `key`'s producer after its stream's snapshot, oldest first:
    /// the publishes its row does not have yet.
    private func readStamps(after snapshot: Int64?, into state: inout ProducerState, _ key: ProducerKey, ref: Int64, _ db: Database) throws {
        guard let snapshot else { return }
        let statement = RawStatement(
            try db.cachedStatement(sql: "SELECT key, time, stamp FROM event_log WHERE key BETWEEN ? AND ? AND stamp IS NOT NULL ORDER BY key"),
            in: db)
        statement.bind(LogRowKey.key(stream: key.stream, sequence: UInt64(snapshot) + 1), at: 1)
        statement.bind(LogRowKey.range(of: key.stream).upperBound, at: 2)
        try statement.forEachRow { row in
            guard let stamp = EventStamp(row.bytes(2)), stamp.ref == ref else { return true }
            state.record(
                ProducerStamp(id: key.producer, epoch: stamp.epoch, sequence: stamp.pseq), sequence: LogRowKey.sequence(of: row.int64(0)),
                now: row.int64(1))
            return true
        }
    }

    private func snapshot(of stream: Int64, _ db: Database) throws -> Int64? {
        if let known = snapshots[stream] { return known }
        let through = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT through_seq FROM producer_snapshots WHERE stream_id = ?"), arguments: [stream])
        snapshots[stream] = .some(through)
        return through
    }

    // MARK: The batch

    /// The producer's number for its stamps, given now if it has none yet (its first
    /// publish: the row is then written with this batch).
    func ref(_ key: ProducerKey, _ pending: inout Pending, _ db: Database) throws -> Int64 {
        if let ref = pending.refs[key] { return ref }
        let last = try lastRef ?? Int64.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(ref), 0) FROM producers")) ?? 0
        lastRef = last + 1
        pending.refs[key] = last + 1
        pending.mustWrite.insert(key.stream)
        return last + 1
    }

    /// A producer's accepted publish that stored no event, so no stamp: its row is written now.
    func publishedWithoutEvent(_ key: ProducerKey, _ pending: inout Pending) {
        pending.mustWrite.insert(key.stream)
    }

    /// Before the stream's events `...through` are deleted: if that reaches past its
    /// snapshot, the stamps there may be a producer's only record, so the stream's rows
    /// that may be behind are loaded now, while their stamps can be read, and written in
    /// this batch. Since this process last wrote the stream's rows (`settled`), those are
    /// the ones it knows are behind; before that, after a start, any of them may be.
    func eventsWillGo(of stream: Int64, through: UInt64, _ pending: inout Pending, _ db: Database) throws {
        guard let snapshot = try snapshot(of: stream, db), UInt64(snapshot) < through else { return }
        try loadRowsBehind(of: stream, &pending, db)
        pending.mustWrite.insert(stream)
    }

    /// Loads the stream's producers whose rows may be behind the log, unless the batch
    /// holds them already: before its snapshot moves past their stamps.
    private func loadRowsBehind(of stream: Int64, _ pending: inout Pending, _ db: Database) throws {
        if settled.contains(stream) {
            for key in behind[stream]?.keys ?? [] { try load(key, &pending, db) }
        } else {
            let names = try String.fetchAll(
                db.cachedStatement(sql: "SELECT producer FROM producers WHERE stream_id = ?"), arguments: [stream])
            for name in names { try load(ProducerKey(stream: stream, producer: name), &pending, db) }
        }
    }

    func streamDeleted(_ stream: Int64, _ pending: inout Pending) {
        pending.deletedStreams.insert(stream)
    }

    /// Forgets producers idle since before `cutoff` (inside a transaction); the cache goes
    /// with them after the commit and reloads on demand. A row that may be behind the log
    /// can look idle when its producer is not: its state, with the stamps, decides, and a
    /// producer that is not idle keeps its row, written again in this batch.
    func expire(before cutoff: Int64, _ pending: inout Pending, _ db: Database) throws {
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT stream_id, producer FROM producers WHERE updated_at < ?"), arguments: [cutoff])
        let delete = try db.cachedStatement(sql: "DELETE FROM producers WHERE stream_id = ? AND producer = ?")
        pending.expired = true
        for row in rows {
            let key = ProducerKey(stream: row[0], producer: row[1])
            if pending.refs[key] != nil { continue }  // publishing in this batch
            if !settled.contains(key.stream) || behind[key.stream]?.keys.contains(key) == true {
                try load(key, &pending, db)
                if let state = pending.loaded[key], state.updatedAt >= cutoff {
                    pending.mustWrite.insert(key.stream)
                    continue
                }
                pending.loaded[key] = nil
            }
            try delete.execute(arguments: [key.stream, key.producer])
        }
    }

    /// Brings a producer's state into `pending.loaded` unless the batch holds it already.
    private func load(_ key: ProducerKey, _ pending: inout Pending, _ db: Database) throws {
        guard pending.refs[key] == nil, let state = try state(key, &pending, db) else { return }
        pending.loaded[key] = state
    }

    /// Writes (inside the transaction) the rows that must or may now be written: every
    /// producer of a stream that must be written (`Pending.mustWrite`) or whose rows have
    /// been behind for `writeBehindMillis`, and that stream's snapshot. The rest of
    /// `changes` stays behind, carried by the stamps. A row the cache knows is there is
    /// updated in place, one seek where an upsert takes two; if it is gone after all
    /// (expired in this transaction), the upsert writes it again. Bound in place
    /// (`RawStatement`).
    func write(
        _ changes: [ProducerKey: ProducerState], millis: Int64, _ pending: inout Pending, _ connection: @autoclosure () throws -> Database
    ) throws {
        var streams = pending.mustWrite
        // A producer with no row yet (its first publish was stamped, or stored no event,
        // and so is in `mustWrite` already; this holds whatever the caller forgot).
        for key in changes.keys where pending.refs[key] == nil { streams.insert(key.stream) }
        for (stream, entry) in behind where millis - entry.since >= Self.writeBehindMillis { streams.insert(stream) }
        streams.subtract(pending.deletedStreams)
        guard !streams.isEmpty else { return }  // before asking for the connection (see `state`)
        let db = try connection()
        for stream in streams { try loadRowsBehind(of: stream, &pending, db) }
        let update = RawStatement(
            try db.cachedStatement(
                sql: """
                    UPDATE producers SET epoch = ?3, last_pseq = ?4, runs_format = ?5, updated_at = ?6, runs = ?7
                    WHERE stream_id = ?1 AND producer = ?2
                    """), in: db)
        let upsert = RawStatement(
            try db.cachedStatement(
                sql: """
                    INSERT INTO producers (stream_id, producer, epoch, last_pseq, runs_format, updated_at, runs, ref)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                    ON CONFLICT (stream_id, producer) DO UPDATE SET
                        epoch = excluded.epoch, last_pseq = excluded.last_pseq, runs = excluded.runs,
                        runs_format = excluded.runs_format, updated_at = excluded.updated_at, ref = excluded.ref
                    """), in: db)
        func put(_ key: ProducerKey, _ state: ProducerState) throws {
            let ref = try ref(key, &pending, db)
            if case .lent? = states[key] {
                try Self.run(update, key, state, ref: nil)
                if db.changesCount == 1 { return }
            }
            try Self.run(upsert, key, state, ref: ref)
        }
        for (key, state) in changes where streams.contains(key.stream) { try put(key, state) }
        for (key, state) in pending.loaded where streams.contains(key.stream) && changes[key] == nil { try put(key, state) }
        let snapshot = try RawStatement(
            db.cachedStatement(
                sql: """
                    INSERT INTO producer_snapshots (stream_id, through_seq)
                    VALUES (?1, coalesce((SELECT max(key) FROM event_log WHERE key BETWEEN ?2 AND ?3) - ?2, 0))
                    ON CONFLICT (stream_id) DO UPDATE SET through_seq = excluded.through_seq
                    """), in: db)
        for stream in streams {
            let range = LogRowKey.range(of: stream)
            snapshot.bind(stream, at: 1)
            snapshot.bind(range.lowerBound, at: 2)
            snapshot.bind(range.upperBound, at: 3)
            try snapshot.execute()
            snapshots[stream] = nil  // read again when next needed: a failed batch leaves it as it was
        }
        pending.written = streams
    }

    /// Writes every row that is behind (inside a transaction), at a clean close, so that
    /// the next start reads no stamps back.
    func writeBehind(_ db: Database) throws {
        var pending = Pending()
        pending.mustWrite = Set(behind.keys)
        try write([:], millis: 0, &pending, db)
    }

    private static func run(_ statement: RawStatement, _ key: ProducerKey, _ state: ProducerState, ref: Int64?) throws {
        statement.bind(key.stream, at: 1)
        statement.bind(key.producer, at: 2)
        statement.bind(Int64(state.epoch), at: 3)
        statement.bind(Int64(state.lastPseq), at: 4)
        statement.bind(ProducerRunsFormat.deltas.rawValue, at: 5)
        statement.bind(state.updatedAt, at: 6)
        if let ref { statement.bind(ref, at: 8) }
        try statement.execute(blob: ProducerRunsFormat.deltas.pack(state.runs), at: 7)
    }

    // MARK: After the commit

    /// After the commit: the states come back to the cache, and what was not written is behind.
    func apply(_ changes: [ProducerKey: ProducerState], _ pending: Pending, millis: Int64) {
        if pending.expired || states.count > 100_000 { states = [:] }  // a cache: reloaded on demand
        for (key, state) in pending.loaded { restore(key, state, pending) }
        for (key, state) in changes { restore(key, state, pending) }
        for stream in pending.written { behind[stream] = nil }
        settled.formUnion(pending.written)
        for key in changes.keys where !pending.written.contains(key.stream) {
            behind[key.stream, default: (keys: [], since: millis)].keys.insert(key)
        }
        for stream in pending.deletedStreams {
            behind[stream] = nil
            snapshots[stream] = nil
            settled.remove(stream)
        }
        if !pending.deletedStreams.isEmpty { states = states.filter { !pending.deletedStreams.contains($0.key.stream) } }
    }

    private func restore(_ key: ProducerKey, _ state: ProducerState, _ pending: Pending) {
        guard let ref = pending.refs[key] else { return }  // not loaded, not stamped, not written: nothing to keep
        states[key] = .stored(state, ref: ref)
    }
}

/// Idle producers are forgotten at most once an hour, by the retention pass.
final class ProducerExpiry: @unchecked Sendable {
    private var last: Int64 = 0

    /// Whether a pass at `now` (ms) should expire producers; notes it if so. Writer's thread only.
    func due(now: Int64) -> Bool {
        guard now - last > 3600 * 1000 else { return false }
        last = now
        return true
    }
}
