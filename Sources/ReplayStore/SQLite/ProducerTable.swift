import GRDB

/// The SQLite writer's cache of producer states, read from `producers` on first use and
/// kept in step after each commit: with one writer per file, the cache cannot go stale.
/// Only the writer's thread touches it (`@unchecked Sendable`: the writer's queue is its lock).
final class ProducerTable: @unchecked Sendable {
    private enum Entry {
        /// Known to have no row.
        case absent
        case stored(ProducerState)
        /// Has a row, whose state a transaction took (`state`): it comes back with the
        /// commit (`apply`); after a failed one it is read again when next asked for.
        case lent
    }

    private var states: [ProducerKey: Entry] = [:]
    let expiry = ProducerExpiry()

    /// The producer's state, for the transaction to change. The cache lends it rather than
    /// share it: a shared copy's runs were copied whole by the first change to them, for
    /// every producer's publish.
    ///
    /// `connection` is asked for only when a statement runs: asking begins the transaction
    /// (`SQLiteTransaction.db`), and a state the cache holds needs none.
    func state(_ key: ProducerKey, _ connection: @autoclosure () throws -> Database) throws -> ProducerState? {
        switch states[key] {
        case .absent?: return nil
        case .stored(let state)?:
            states[key] = .lent
            return state
        case .lent?, nil: break
        }
        if states.count > 100_000 { states = [:] }  // a cache: reloaded on demand
        let db = try connection()
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT epoch, last_pseq, runs, runs_format, updated_at FROM producers WHERE stream_id = ? AND producer = ?"),
            arguments: [key.stream, key.producer])
        let state = row.map { row in
            ProducerState(
                epoch: UInt64(row["epoch"] as Int64), lastPseq: UInt64(row["last_pseq"] as Int64),
                runs: (ProducerRunsFormat(rawValue: row["runs_format"] as Int64) ?? .triples).unpack(row["runs"]), updatedAt: row["updated_at"])
        }
        states[key] = state == nil ? .absent : .lent
        return state
    }

    /// Writes the states a transaction changed (inside it), their runs as deltas. A row the
    /// cache knows is there is updated in place, one seek where an upsert takes two; if it
    /// is gone after all (expired in this transaction), the upsert writes it again. Bound
    /// in place (`RawStatement`): this runs for every producer in every batch it publishes
    /// in, and GRDB's arguments were most of its cost.
    func write(_ changes: [ProducerKey: ProducerState], _ connection: @autoclosure () throws -> Database) throws {
        guard !changes.isEmpty else { return }  // before asking for the connection (see `state`)
        let db = try connection()
        let update = RawStatement(
            try db.cachedStatement(
                sql: """
                    UPDATE producers SET epoch = ?3, last_pseq = ?4, runs_format = ?5, updated_at = ?6, runs = ?7
                    WHERE stream_id = ?1 AND producer = ?2
                    """), in: db)
        let upsert = RawStatement(
            try db.cachedStatement(
                sql: """
                    INSERT INTO producers (stream_id, producer, epoch, last_pseq, runs_format, updated_at, runs)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (stream_id, producer) DO UPDATE SET
                        epoch = excluded.epoch, last_pseq = excluded.last_pseq, runs = excluded.runs,
                        runs_format = excluded.runs_format, updated_at = excluded.updated_at
                    """), in: db)
        for (key, state) in changes {
            if case .lent? = states[key] {
                try Self.run(update, key, state)
                if db.changesCount == 1 { continue }
            }
            try Self.run(upsert, key, state)
        }
    }

    private static func run(_ statement: RawStatement, _ key: ProducerKey, _ state: ProducerState) throws {
        statement.bind(key.stream, at: 1)
        statement.bind(key.producer, at: 2)
        statement.bind(Int64(state.epoch), at: 3)
        statement.bind(Int64(state.lastPseq), at: 4)
        statement.bind(ProducerRunsFormat.deltas.rawValue, at: 5)
        statement.bind(state.updatedAt, at: 6)
        try statement.execute(blob: ProducerRunsFormat.deltas.pack(state.runs), at: 7)
    }

    /// After the commit.
    func apply(_ changes: [ProducerKey: ProducerState], deletedStreams: [Int64], expired: Bool) {
        if expired { states = [:] }
        for (key, state) in changes { states[key] = .stored(state) }
        if !deletedStreams.isEmpty { states = states.filter { !deletedStreams.contains($0.key.stream) } }
    }

    /// Forgets producers idle since before `millis` (inside a transaction); the cache goes
    /// with them after the commit and reloads on demand.
    static func expire(before millis: Int64, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM producers WHERE updated_at < ?", arguments: [millis])
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
