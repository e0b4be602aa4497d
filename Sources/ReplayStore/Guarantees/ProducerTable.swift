import GRDB

/// The writer's cache of producer states, read from `producers` on first use and kept in
/// step after each commit. Only the writer's thread touches it (`@unchecked Sendable`:
/// the writer's queue is its lock).
final class ProducerTable: @unchecked Sendable {
    struct Key: Hashable {
        let stream: Int64
        let producer: String
    }

    /// How long an idle producer is remembered: a week after its last publish (the Durable
    /// Streams protocol's recommendation). After that it is new again: pseq 0, any epoch.
    static let idleLifetimeMillis: Int64 = 7 * 24 * 3600 * 1000

    /// `.some(nil)`: known to have no state.
    private var states: [Key: ProducerState?] = [:]
    private var lastExpiry: Int64 = 0

    func state(_ key: Key, _ db: Database) throws -> ProducerState? {
        if let cached = states[key] { return cached }
        if states.count > 100_000 { states = [:] }  // a cache: reloaded on demand
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT epoch, last_pseq, runs, updated_at FROM producers WHERE stream_id = ? AND producer = ?"),
            arguments: [key.stream, key.producer])
        let state = row.map { row in
            ProducerState(
                epoch: UInt64(row["epoch"] as Int64), lastPseq: UInt64(row["last_pseq"] as Int64),
                runs: ProducerState.unpack(row["runs"]), updatedAt: row["updated_at"])
        }
        states[key] = .some(state)
        return state
    }

    /// Writes the states a transaction changed (inside it).
    static func write(_ changes: [Key: ProducerState], _ db: Database) throws {
        for (key, state) in changes {
            try db.cachedStatement(sql: """
                INSERT INTO producers (stream_id, producer, epoch, last_pseq, runs, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (stream_id, producer) DO UPDATE SET
                    epoch = excluded.epoch, last_pseq = excluded.last_pseq, runs = excluded.runs, updated_at = excluded.updated_at
                """
            ).execute(arguments: [key.stream, key.producer, Int64(state.epoch), Int64(state.lastPseq), state.packedRuns, state.updatedAt])
        }
    }

    /// After the commit.
    func apply(_ changes: [Key: ProducerState], deletedStreams: [Int64]) {
        for (key, state) in changes { states[key] = .some(state) }
        if !deletedStreams.isEmpty { states = states.filter { !deletedStreams.contains($0.key.stream) } }
    }

    /// Forgets producers idle for longer than their lifetime (at most once an hour; inside
    /// a transaction). The cache is dropped with them and reloads on demand.
    func expire(now: Int64, _ db: Database) throws {
        guard now - lastExpiry > 3600 * 1000 else { return }
        try db.execute(sql: "DELETE FROM producers WHERE updated_at < ?", arguments: [now - Self.idleLifetimeMillis])
        lastExpiry = now
        states = [:]
    }
}
