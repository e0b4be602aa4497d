import Foundation
import NIOCore
import PostgresNIO
import ReplayModel
import ReplaySync

/// The PostgreSQL side of `LogTransaction`, inside a transaction the writer opened on its
/// session. Several daemons write the same rows, so nothing is taken from the catalog:
///
/// - A stream is read under a transaction-scoped advisory lock on its name, then its row
///   `FOR UPDATE`: every writer of a stream waits for the previous one to commit and then
///   sees its numbers, which makes one contiguous, gap-free sequence from every daemon.
///   Locking the name (not only the row) also orders two daemons creating the same stream.
/// - `prepare` takes the locks of every stream a batch names at once, in name order, so two
///   daemons' batches never wait on each other in a cycle.
/// - Events are buffered and inserted with one statement (`unnest` of arrays) before
///   anything else reads or writes: a round trip per batch instead of one per event.
/// - In `Mode.cached`, none of that: the rows are the catalog's, written only if they are
///   still the version this daemon saw (`RowVersions`), and anything that needs more than
///   a stream's row and its new events (or reads of what is committed) throws `NeedsLocks`
///   before a write is sent.
final class PostgresTransaction: LogTransaction {
    /// How the batch holds its streams' rows.
    enum Mode {
        /// Locked by name and read fresh (`prepare`).
        case locked
        /// As this daemon last saw them, each written only if still that version. The
        /// writer's own table, looked up per stream rather than copied per batch: it is
        /// changed after each commit while the batch's rules still hold this transaction,
        /// and a copy would then be duplicated whole, a dictionary of every stream.
        case cached(Locked<RowVersions>, at: ContinuousClock.Instant)
    }

    /// Thrown in `Mode.cached` by what needs the locks; the batch runs again with them.
    struct NeedsLocks: Error {}

    let session: PinnedConnection
    let mode: Mode
    /// Streams read (and locked) in this transaction; `nil`: known not to exist.
    private var locked: [String: Catalog.Record?] = [:]
    private var pending = PendingEvents()
    /// The last stream row's update, held back so that the commit's notification can go
    /// in its statement rather than one of its own.
    private var heldUpdate: StreamRowUpdate?
    /// The row versions read, and the statements that wrote rows (each answers its row's
    /// id and new version): what the rows are once this transaction commits.
    private var versionsRead: [Int64: Int64] = [:]
    private var rowWrites: [EventLoopFuture<[StreamRowUpdate.Row]>] = []
    /// Whether the connection was already in a transaction, chained from the last commit
    /// (`commit(notifying:chain:)`): then this one sends no `BEGIN`.
    let chained: Bool
    /// Whether this transaction has sent anything: what its `COMMIT` (or a `ROLLBACK`) ends.
    private(set) var began = false

    init(_ session: PinnedConnection, mode: Mode = .locked, chained: Bool = false) {
        self.session = session
        self.mode = mode
        self.chained = chained
        if case .locked = mode { begin() }
    }

    /// `BEGIN`, sent without waiting, unless the connection is in a chained transaction. A
    /// cached batch begins with its first statement, so one that turns out to need the
    /// locks has sent nothing.
    private func begin() {
        guard !began else { return }
        began = true
        if !chained { session.send("BEGIN") }
    }

    /// Whether the commit began the next transaction (`COMMIT AND CHAIN`).
    private var chainsNext = false

    /// Whether the connection is in a transaction once this one committed: the one its
    /// `COMMIT AND CHAIN` began, or, if it sent nothing, the one it was chained into.
    var leavesTransactionOpen: Bool { began ? chainsNext : chained }

    /// Throws in `Mode.cached`: for everything but appending to a stream's row.
    func requireLocks() throws {
        if case .cached = mode { throw NeedsLocks() }
    }

    static let streamColumns = """
        s.id, s.name, s.capacity, s.max_bytes, s.max_age_seconds, s.created_at, s.first_seq, s.last_seq, s.byte_count,
        s.terminal, s.terminal_message, s.terminal_at, s.last_time, s.source_command, s.source_connect, s.source_options,
        s.content_type, s.ttl_seconds, s.expires_at, s.writer_seq, s.fork_seq, s.fork_offset, s.fork_sub_offset,
        s.deleted_at, s.keep_unacked, s.event_ttl_seconds, src.name AS fork_source, s.xmin::text::bigint AS row_version, s.chain_head, s.chain_base,
        s.scheduled_count, s.next_due, s.removed_events, s.removed_through,
        s.compact, s.tombstone_retention_seconds, s.compacted_at, s.compacted_events,
        EXISTS (SELECT FROM consumers c WHERE c.stream_id = s.id) AS has_consumers,
        EXISTS (SELECT FROM groups g WHERE g.stream_id = s.id) AS has_groups,
        EXISTS (SELECT FROM derivations d WHERE d.stream_id = s.id) AS is_derived
        """

    static var locksStreamsUpFront: Bool { true }
    static var writesEveryTouchedRow: Bool { true }
    static var readsInPlace: Bool { false }

    func prepare(streams: Set<String>) throws {
        if case .cached = mode { return }
        let names = streams.filter { locked[$0] == nil }.sorted()
        guard !names.isEmpty else { return }
        try flush()
        // The advisory locks (by name, so that two daemons creating one stream wait for each
        // other), then the rows, locked in id order. Two statements, not one: a statement's
        // snapshot is taken when it starts, so rows read in the statement that waited for the
        // lock would miss a stream another daemon created and committed meanwhile (and insert
        // it again). The lock is sent without waiting for its answer: the rows' statement
        // starts after it, and waits for both.
        session.send("SELECT count(pg_advisory_xact_lock(hashtextextended(n, 0))) FROM unnest(\(names)::text[]) AS n")
        let rows = try session.query(
            PostgresQuery(
                unsafeSQL: """
                    SELECT \(Self.streamColumns) FROM streams s LEFT JOIN streams src ON src.id = s.fork_of
                    WHERE s.name = ANY($1) ORDER BY s.id FOR UPDATE OF s
                    """, binds: Self.binds(names)))
        let found = try Self.loadRecords(rows.rows, session, versions: &versionsRead)
        for name in names { locked[name] = .some(found[name]) }
    }

    func record(_ name: String, cached: Catalog.Record?) throws -> Catalog.Record? {
        if case .cached(let versions, let now) = mode {
            guard let cached, let version = versions.withLock({ $0.version(for: cached, at: now) }) else { throw NeedsLocks() }
            versionsRead[cached.id] = version
            return cached
        }
        if let known = locked[name] { return known }
        try prepare(streams: [name])
        return locked[name] ?? nil
    }

    /// Also in `Mode.cached`: a read of what another daemon committed needs no lock.
    /// What this transaction buffered goes out first only if it writes that row: a refresh
    /// reads streams the batch has not touched, and a flush there split a batch's events
    /// from its row's statement.
    func committedRecord(_ name: String) throws -> Catalog.Record? {
        if heldUpdate?.record.info.name == name { try flush() }
        let rows = try session.query(
            """
            SELECT \(unescaped: Self.streamColumns) FROM streams s LEFT JOIN streams src ON src.id = s.fork_of WHERE s.name = \(name)
            """)
        let found = try Self.loadRecords(rows.rows, session, versions: &versionsRead)
        return found[name]
    }

    func insertStream(_ name: String, _ config: StreamConfig, createdAt: String, fork: (StreamFork, sourceID: Int64)?) throws -> Int64 {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            INSERT INTO streams (name, capacity, max_bytes, max_age_seconds, created_at,
                                 source_command, source_connect, source_options,
                                 content_type, ttl_seconds, expires_at,
                                 fork_of, fork_seq, fork_offset, fork_sub_offset, keep_unacked, event_ttl_seconds,
                                 compact, tombstone_retention_seconds)
            VALUES (\(name), \(config.capacity), \(config.maxBytes), \(config.maxAge), \(createdAt),
                    \(config.source?.command), \(config.source?.connect.rawValue), \(config.source?.options.json),
                    \(config.contentType), \(config.expiry?.idleSeconds), \(config.expiry?.deadline.map(Timestamp.millis)),
                    \(fork?.sourceID), \(fork.map { Int64($0.0.sequence) }), \(fork.map { Int64($0.0.requestedSequence) }),
                    \(fork.map { Int64($0.0.requestedSubOffset) }), \(config.keepUnacked), \(config.eventTTL),
                    \(config.compaction != nil), \(config.compaction?.tombstoneRetention))
            RETURNING id
            """)
        locked[name] = nil
        return try Self.single(rows, Int64.self)
    }

    func recordCreator(_ creator: String, of stream: Int64) throws {
        try requireLocks()
        try flush()
        try session.query("UPDATE streams SET created_by = \(creator) WHERE id = \(stream)")
    }

    /// Counted under a transaction-scoped lock on the creator: two daemons creating for one
    /// token at once take turns, and the second counts (READ COMMITTED: a new snapshot per
    /// statement) the streams the first committed, so together they cannot pass the cap.
    func streamsCreated(by creator: String) throws -> Int {
        try requireLocks()
        try flush()
        try session.query("SELECT pg_advisory_xact_lock(hashtextextended(\("creator:" + creator), 0))")
        let rows = try session.query("SELECT count(*) FROM streams WHERE created_by = \(creator) AND deleted_at IS NULL")
        return Int(try Self.single(rows, Int64.self))
    }

    /// Ids are a `bigserial` and events are keyed by (stream id, seq): no room to run out of.
    func roomForAStream() -> StoreError? { nil }

    /// The buffered events go in the same statement, as a data-modifying `WITH` (which
    /// PostgreSQL runs once whether or not the rest refers to it): a batch's events and its
    /// stream's row in one statement. With nothing buffered the arrays are empty. Sent
    /// without waiting for its answer (nothing here reads it before the commit): the next
    /// statement that is waited for, at the latest the `COMMIT`, throws its failure
    /// (`PinnedConnection.send`), so a plain batch waits for two answers, its streams' rows
    /// and its `COMMIT` (a cached one for the `COMMIT` alone). The last update of a batch
    /// is held back for the commit's notification (`commit(notifying:chain:)`).
    func updateStream(_ record: Catalog.Record) throws {
        var expected: Int64?
        if case .cached = mode {
            guard let version = versionsRead[record.id] else { throw NeedsLocks() }
            expected = version
        }
        // A derivation's outputs carry their origins, and traced events their trace
        // contexts, which the prepared statement does not take: they go in an insert of
        // their own.
        if pending.isAnnotated { try flush() }
        let update = StreamRowUpdate(record: record, events: pending, expectedVersion: expected)
        pending = PendingEvents()
        sendHeldUpdate(notifying: nil)
        heldUpdate = update
    }

    /// The held update, if any, with the notice folded into its statement.
    ///
    /// Its `WHERE` holds the row to the version expected (`Mode.cached`): PostgreSQL waits
    /// for another transaction writing the row and then checks the version it committed,
    /// so a row another daemon wrote meanwhile updates nothing, and
    /// `replay_require_current` fails the transaction (SQLSTATE `RP001`). An event row that
    /// another daemon stored under the same number fails it too, as a duplicate key.
    private func sendHeldUpdate(notifying notice: String?) {
        guard var update = heldUpdate else { return }
        heldUpdate = nil
        begin()
        update.notice = notice
        rowWrites.append(session.send(update))
    }

    /// Sends what is still buffered, the notice for the other daemons (inside the
    /// transaction, so it goes out with the commit and never before), and commits. Without
    /// a statement sent, there is nothing to commit.
    ///
    /// With `chain` (the writer expects its next batch at once), `COMMIT AND CHAIN` begins the
    /// next transaction in the commit's own round trip: the next batch starts with its
    /// first statement, where a `BEGIN` cost a round trip of its own (postgres-nio sends a
    /// connection's statements one after another, each when the one before has answered).
    /// The chained transaction takes no snapshot and no transaction id until a statement
    /// runs in it, so it holds nothing back while it waits; if the batch sends nothing, the
    /// log ends it when its writer goes idle (`PostgresLog.writerIdle`). On a transaction
    /// that failed, it answers as a rollback and still chains; the failure path's
    /// `ROLLBACK` then ends the chain.
    func commit(notifying notice: String?, chain: Bool) throws {
        // Events after the last update (none from the rules, which update every stream
        // they touch last) go before it.
        if !pending.isEmpty { try flush() }
        if heldUpdate != nil {
            sendHeldUpdate(notifying: notice)
        } else if let notice {
            begin()
            session.send("SELECT pg_notify(\(PostgresLog.channel), \(notice))")
        }
        guard began else { return }
        try session.query(chain ? "COMMIT AND CHAIN" : "COMMIT")
        chainsNext = chain
    }

    /// The version of each stream row this transaction read or wrote, as it is once the
    /// transaction committed (every statement sent has answered by then).
    func rowVersions() -> [Int64: Int64] {
        var versions = versionsRead
        for write in rowWrites {
            guard let row = (try? write.wait())?.first, let id = row.id, let version = row.version else { continue }
            versions[id] = version
        }
        return versions
    }

    func deleteStream(_ id: Int64) throws {
        try requireLocks()
        try flush()
        try session.query("DELETE FROM streams WHERE id = \(id)")
    }

    /// The stamp is not kept: a producer's row is written with every batch it publishes in
    /// (daemons share the rows, and one daemon's stamps would be another's to read back).
    func insertEvent(
        stream: Int64, sequence: UInt64, millis: Int64, payload: Data, stamp: ProducerStamp?, origin: String?, trace: TraceParent?,
        key: EventKey?, expiresAt: Int64?, hash: EventHash
    ) throws {
        pending.append(
            stream: stream, sequence: Int64(sequence), millis: millis, payload: payload, origin: origin, trace: trace, key: key,
            expiresAt: expiresAt, hash: hash)
        if pending.bytes > 4 << 20 { try flush() }
    }

    /// Sends the held stream update and the buffered events (without waiting: see
    /// `updateStream`), before a statement that may read what they write.
    func flush() throws {
        sendHeldUpdate(notifying: nil)
        guard !pending.isEmpty else { return }
        begin()
        let events = pending
        pending = PendingEvents()
        guard events.isAnnotated else {
            session.send(
                """
                INSERT INTO event_log (stream_id, seq, time, payload, hash)
                SELECT * FROM unnest(\(events.streams)::bigint[], \(events.sequences)::bigint[], \(events.times)::bigint[],
                    \(events.payloads)::bytea[], \(events.hashes)::bytea[])
                """)
            return
        }
        // A derivation's outputs, traced, keyed and expiring events: '' is a plain event's
        // origin, trace and key, 0 its expiry.
        session.send(
            """
            INSERT INTO event_log (stream_id, seq, time, payload, hash, origin, traceparent, event_key, expires_at)
            SELECT s, q, t, p, h, NULLIF(o, ''), NULLIF(c, ''), NULLIF(k, ''), NULLIF(x, 0) FROM unnest(\(events.streams)::bigint[],
                \(events.sequences)::bigint[], \(events.times)::bigint[], \(events.payloads)::bytea[], \(events.hashes)::bytea[],
                \(events.filledOrigins)::text[], \(events.filledTraces)::text[], \(events.filledKeys)::text[],
                \(events.filledExpiries)::bigint[])
                AS e (s, q, t, p, h, o, c, k, x)
            """)
    }

    func deleteEvents(of stream: Int64) throws {
        try requireLocks()
        try flush()
        try session.query("DELETE FROM event_log WHERE stream_id = \(stream)")
        try session.query("DELETE FROM event_holes WHERE stream_id = \(stream)")
    }

    func removeEvents(of stream: Int64, from: UInt64, through: UInt64) throws -> (events: Int, bytes: Int) {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            WITH gone AS (DELETE FROM event_log WHERE stream_id = \(stream) AND seq BETWEEN \(Int64(from)) AND \(Int64(through))
                          RETURNING seq, length(payload) AS size, hash)
            SELECT count(*), coalesce(sum(size), 0)::bigint, min(seq), max(seq), (SELECT hash FROM gone ORDER BY seq DESC LIMIT 1) FROM gone
            """)
        let (events, bytes, first, last, hash) = try Self.firstRow(rows).decode((Int64, Int64, Int64?, Int64?, Data?).self)
        guard events > 0, let first, let last else { return (0, 0) }
        let before = Int64(from) - 1
        let after = Int64(through) + 1
        var neighbours = try Self.holes(
            session.query(
                """
                SELECT from_seq, through_seq, hash FROM event_holes
                WHERE stream_id = \(stream) AND through_seq BETWEEN \(before) AND \(Int64(through))
                """))
        if let next = try Self.hole(of: stream, containing: UInt64(after), session) { neighbours.append(next) }
        let merged = EventHole.merging(first: UInt64(first), last: (UInt64(last), StreamRow.hash(hash)), neighbours: neighbours)
        let parts = neighbours.map { Int64($0.through) }
        try session.query("DELETE FROM event_holes WHERE stream_id = \(stream) AND through_seq = ANY(\(parts)::bigint[])")
        try session.query(
            """
            INSERT INTO event_holes (stream_id, through_seq, from_seq, hash)
            VALUES (\(stream), \(Int64(merged.through)), \(Int64(merged.from)), \(StreamRowUpdate.column(merged.hash)))
            """)
        return (Int(events), Int(bytes))
    }

    func hole(of stream: Int64, containing sequence: UInt64) throws -> EventHole? {
        try requireLocks()
        try flush()
        return try Self.hole(of: stream, containing: sequence, session)
    }

    /// The stream's hole that holds `sequence`, as `session` sees it.
    static func hole(of stream: Int64, containing sequence: UInt64, _ session: some PostgresQuerying) throws -> EventHole? {
        try holes(
            session.query(
                """
                SELECT from_seq, through_seq, hash FROM event_holes
                WHERE stream_id = \(stream) AND through_seq >= \(Int64(sequence)) AND from_seq <= \(Int64(sequence))
                ORDER BY through_seq LIMIT 1
                """)
        ).first
    }

    func expiredEvents(by millis: Int64, limit: Int, streams: [String]?) throws -> [(stream: String, sequence: UInt64)] {
        try requireLocks()
        try flush()
        guard let streams, !streams.isEmpty else { return [] }
        let rows = try session.query(
            """
            SELECT s.name, e.seq FROM event_log AS e JOIN streams AS s ON s.id = e.stream_id
            WHERE e.expires_at IS NOT NULL AND e.expires_at <= \(millis) AND s.name = ANY(\(streams))
            ORDER BY e.expires_at LIMIT \(limit)
            """)
        return try rows.rows.map { row in
            let (name, sequence) = try row.decode((String, Int64).self)
            return (name, UInt64(sequence))
        }
    }

    func streamsWithExpiredEvents(by millis: Int64, limit: Int) throws -> [String] {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            SELECT DISTINCT s.name FROM (SELECT stream_id FROM event_log WHERE expires_at IS NOT NULL AND expires_at <= \(millis)
                                         ORDER BY expires_at LIMIT \(limit)) AS e
            JOIN streams AS s ON s.id = e.stream_id
            """)
        return try rows.rows.map { try $0.decode(String.self) }
    }

    func dropHoles(of stream: Int64, through: UInt64) throws -> Int {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            WITH gone AS (DELETE FROM event_holes WHERE stream_id = \(stream) AND through_seq <= \(Int64(through))
                          RETURNING through_seq - from_seq + 1 AS events)
            SELECT coalesce(sum(events), 0)::bigint FROM gone
            """)
        return Int(try Self.single(rows, Int64.self))
    }

    private static func holes(_ rows: PostgresQueryResult) throws -> [EventHole] {
        try rows.rows.map { row in
            let (from, through, hash) = try row.decode((Int64, Int64, Data?).self)
            return EventHole(from: UInt64(from), through: UInt64(through), hash: StreamRow.hash(hash))
        }
    }

    func deleteEvents(of stream: Int64, from: UInt64, through: UInt64) throws -> Int {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            WITH gone AS (DELETE FROM event_log WHERE stream_id = \(stream) AND seq BETWEEN \(Int64(from)) AND \(Int64(through))
                          RETURNING length(payload) AS size)
            SELECT coalesce(sum(size), 0)::bigint FROM gone
            """)
        return Int(try Self.single(rows, Int64.self))
    }

    func eventHash(stream: Int64, sequence: UInt64) throws -> EventHash? {
        try requireLocks()
        try flush()
        let rows = try session.query("SELECT hash FROM event_log WHERE stream_id = \(stream) AND seq = \(Int64(sequence))")
        return try rows.rows.first.map { StreamRow.hash(try $0.decode(Data?.self)) }
    }

    func walkPayloadSizes(of stream: Int64, from: UInt64, _ body: (UInt64, Int) -> Bool) throws {
        try requireLocks()
        try flush()
        var next = Int64(from)
        while true {
            let rows = try session.query(
                """
                SELECT seq, length(payload)::bigint FROM event_log
                WHERE stream_id = \(stream) AND seq >= \(next) ORDER BY seq LIMIT 1000
                """)
            var count = 0
            for row in rows.rows {
                let (sequence, size) = try row.decode((Int64, Int64).self)
                count += 1
                next = sequence + 1
                guard body(UInt64(sequence), Int(size)) else { return }
            }
            if count < 1000 { return }
        }
    }

    func firstSequence(of stream: Int64, in window: ClosedRange<UInt64>, atOrAfter millis: Int64) throws -> UInt64 {
        try requireLocks()
        try flush()
        return try Self.firstSequence(of: stream, in: window, atOrAfter: millis, session)
    }

    static func firstSequence(
        of stream: Int64, in window: ClosedRange<UInt64>, atOrAfter millis: Int64, _ session: some PostgresQuerying
    ) throws -> UInt64 {
        try TimeSearch.firstSequence(in: window, atOrAfter: millis) { sequence in
            let rows = try session.query(
                """
                SELECT seq, time FROM event_log WHERE stream_id = \(stream) AND seq BETWEEN \(Int64(sequence)) AND \(Int64(window.upperBound))
                ORDER BY seq LIMIT 1
                """)
            return try rows.rows.first.map { row in
                let (sequence, millis) = try row.decode((Int64, Int64).self)
                return (UInt64(sequence), millis)
            }
        }
    }

    func forEachEvent(
        _ segments: LogSegments, limit: Int, byteBudget: Int, expiredBy: Int64,
        _ body: EventVisitor
    ) throws {
        // Only what this transaction buffered for the streams read goes out first (see
        // `committedRecord`).
        let read = Set(segments.segments.map(\.streamID))
        if pending.streams.contains(where: read.contains) || heldUpdate?.events.streams.contains(where: read.contains) == true {
            try flush()
        }
        try Self.forEachEvent(segments, limit: limit, byteBudget: byteBudget, expiredBy: expiredBy, session, inWriter: true, body)
    }

    /// Writes, sent without waiting (see `updateStream`).
    func writeConsumer(stream: Int64, _ consumer: ConsumerInfo) throws {
        try requireLocks()
        try flush()
        session.send(
            """
            INSERT INTO consumers (stream_id, name, acked_seq, created_at, updated_at)
            VALUES (\(stream), \(consumer.name), \(Int64(consumer.ackedSequence)), \(Timestamp.millis(consumer.createdAt)),
                    \(Timestamp.millis(consumer.updatedAt)))
            ON CONFLICT (stream_id, name) DO UPDATE SET acked_seq = excluded.acked_seq, updated_at = excluded.updated_at
            """)
    }

    func deleteConsumer(stream: Int64, name: String) throws {
        try requireLocks()
        try flush()
        session.send("DELETE FROM consumers WHERE stream_id = \(stream) AND name = \(name)")
    }

    /// Read fresh in every transaction: another daemon may have moved it (its stream's lock,
    /// held since `record`, keeps it still until this commit).
    func producerState(_ key: ProducerKey) throws -> ProducerState? {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            SELECT epoch, last_pseq, runs, updated_at FROM producers WHERE stream_id = \(key.stream) AND producer = \(key.producer)
            """)
        return try rows.rows.first.map { row in
            let (epoch, lastPseq, runs, updatedAt) = try row.decode((Int64, Int64, Data, Int64).self)
            return ProducerState(epoch: UInt64(epoch), lastPseq: UInt64(lastPseq), runs: ProducerRunsFormat.triples.unpack(runs), updatedAt: updatedAt)
        }
    }

    /// Every producer's row is written with the batch that changed it (see `insertEvent`).
    func publishedWithoutEvent(_ key: ProducerKey) {}

    func writeProducers(_ changes: [ProducerKey: ProducerState], millis: Int64) throws {
        guard !changes.isEmpty else { return }
        try requireLocks()
        try flush()
        for (key, state) in changes {
            try session.send(
                """
                INSERT INTO producers (stream_id, producer, epoch, last_pseq, runs, updated_at)
                VALUES (\(key.stream), \(key.producer), \(Int64(state.epoch)), \(Int64(state.lastPseq)), \(ProducerRunsFormat.triples.pack(state.runs)), \(state.updatedAt))
                ON CONFLICT (stream_id, producer) DO UPDATE SET
                    epoch = excluded.epoch, last_pseq = excluded.last_pseq, runs = excluded.runs, updated_at = excluded.updated_at
                """)
        }
    }

    func expireProducers(before millis: Int64) throws {
        try requireLocks()
        try flush()
        try session.query("DELETE FROM producers WHERE updated_at < \(millis)")
    }

    func savepoint() throws {
        try requireLocks()
        try flush()
        try session.query("SAVEPOINT atomic_send")
    }

    func rollbackToSavepoint() throws {
        try requireLocks()
        pending = PendingEvents()
        try session.query("ROLLBACK TO SAVEPOINT atomic_send")
        try session.query("RELEASE SAVEPOINT atomic_send")
        // Streams read after the savepoint may have been created by the rolled-back part.
        locked = [:]
    }

    func releaseSavepoint() throws {
        try requireLocks()
        try flush()
        try session.query("RELEASE SAVEPOINT atomic_send")
    }

    // MARK: Rows

    static func binds(_ names: [String]) -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(names)
        return binds
    }

    static func single<T: PostgresDecodable>(_ result: PostgresQueryResult, _ type: T.Type) throws -> T {
        try firstRow(result).decode(T.self)
    }

    /// The result's one row.
    static func firstRow(_ result: PostgresQueryResult) throws -> PostgresRow {
        guard let row = result.rows.first else { throw StoreError.unavailable("PostgreSQL returned no row where one was expected") }
        return row
    }

    /// Streams from rows selected with `streamColumns`, by name, with their consumers and
    /// groups. Each row says whether its stream has any, so a batch on streams with none
    /// makes no round trip for them: a batch's round trips are most of its time (each is
    /// a trip through postgres-nio's event loop and a wait of the writer's thread).
    ///
    /// The flags are as fresh as the rows they come with: every writer takes a stream's
    /// name lock (`prepare`) in a statement before the one that reads its row, so a
    /// transaction that changed its consumers or groups has committed before that
    /// statement, and its snapshot, begins.
    /// Each row's version (`RowVersions`) goes to `versions`.
    static func loadRecords(
        _ rows: [PostgresRow], _ session: some PostgresQuerying, versions: inout [Int64: Int64]
    ) throws -> [String: Catalog.Record] {
        var records: [String: Catalog.Record] = [:]
        var (withConsumers, withGroups): ([Int64: String], [Int64: String]) = ([:], [:])
        for row in rows {
            let c = row.makeRandomAccess()
            let stream = StreamRow(
                id: try c["id"].decode(Int64.self), name: try c["name"].decode(String.self),
                capacity: try c["capacity"].decode(Int?.self), maxBytes: try c["max_bytes"].decode(Int?.self),
                maxAge: try c["max_age_seconds"].decode(Double?.self), createdAt: try c["created_at"].decode(String.self),
                firstSequence: try c["first_seq"].decode(Int64.self), lastSequence: try c["last_seq"].decode(Int64.self),
                byteCount: try c["byte_count"].decode(Int.self), terminal: try c["terminal"].decode(String?.self),
                terminalMessage: try c["terminal_message"].decode(String?.self), terminalAt: try c["terminal_at"].decode(String?.self),
                lastTime: try c["last_time"].decode(Int64.self), sourceCommand: try c["source_command"].decode(String?.self),
                sourceConnect: try c["source_connect"].decode(String?.self), sourceOptions: try c["source_options"].decode(String?.self),
                contentType: try c["content_type"].decode(String?.self), ttlSeconds: try c["ttl_seconds"].decode(Int?.self),
                expiresAt: try c["expires_at"].decode(Int64?.self), writerSequence: try c["writer_seq"].decode(String?.self),
                forkSequence: try c["fork_seq"].decode(Int64?.self), forkOffset: try c["fork_offset"].decode(Int64?.self),
                forkSubOffset: try c["fork_sub_offset"].decode(Int64?.self), deletedAt: try c["deleted_at"].decode(String?.self),
                keepUnacked: try c["keep_unacked"].decode(Int?.self), eventTTL: try c["event_ttl_seconds"].decode(Double?.self),
                forkSource: try c["fork_source"].decode(String?.self),
                chainHead: StreamRow.hash(try c["chain_head"].decode(Data?.self)),
                chainBase: StreamRow.hash(try c["chain_base"].decode(Data?.self)),
                scheduledCount: Int(try c["scheduled_count"].decode(Int64.self)), nextDue: try c["next_due"].decode(Int64?.self),
                removedEvents: Int(try c["removed_events"].decode(Int64.self)), removedThrough: try c["removed_through"].decode(Int64.self),
                compact: try c["compact"].decode(Bool.self), tombstoneRetention: try c["tombstone_retention_seconds"].decode(Double?.self),
                compactedAt: try c["compacted_at"].decode(Int64?.self), compactedEvents: Int(try c["compacted_events"].decode(Int64.self)))
            records[stream.name] = try stream.record()
            records[stream.name]?.derived = try c["is_derived"].decode(Bool.self)
            versions[stream.id] = try c["row_version"].decode(Int64.self)
            if try c["has_consumers"].decode(Bool.self) { withConsumers[stream.id] = stream.name }
            if try c["has_groups"].decode(Bool.self) { withGroups[stream.id] = stream.name }
        }
        try loadConsumers(of: withConsumers, into: &records, session)
        try loadGroups(of: withGroups, into: &records, session)
        return records
    }

    /// Fills in the durable consumers of the streams `names` names by id.
    private static func loadConsumers(
        of names: [Int64: String], into records: inout [String: Catalog.Record], _ session: some PostgresQuerying
    ) throws {
        guard !names.isEmpty else { return }
        var ids = PostgresBindings()
        ids.append(Array(names.keys))
        let rows = try session.query(
            PostgresQuery(
                unsafeSQL: "SELECT stream_id, name, acked_seq, created_at, updated_at FROM consumers WHERE stream_id = ANY($1)", binds: ids))
        for row in rows.rows {
            let (stream, name, acked, created, updated) = try row.decode((Int64, String, Int64, Int64, Int64).self)
            guard let streamName = names[stream] else { continue }
            records[streamName]?.consumers[name] = ConsumerInfo(
                name: name, ackedSequence: UInt64(acked), createdAt: Timestamp.date(millis: created), updatedAt: Timestamp.date(millis: updated))
        }
    }
}

/// Events waiting for the batch's one INSERT, as the arrays `unnest` takes.
struct PendingEvents: Sendable {
    var streams: [Int64] = []
    var sequences: [Int64] = []
    var times: [Int64] = []
    var payloads: [ByteBuffer] = []
    var hashes: [ByteBuffer] = []
    /// Filled only once an event has an origin (a derivation's output): '' for the others.
    var origins: [String] = []
    /// Filled only once an event has a trace context: '' for the others.
    var traces: [String] = []
    /// Filled only once an event has a key: '' for the others (a key is never empty).
    var keys: [String] = []
    /// Filled only once an event expires: 0 for the others.
    var expiries: [Int64] = []
    var bytes = 0

    var isEmpty: Bool { streams.isEmpty }
    /// Whether an event has an origin, a trace context, a key or an expiry (the plain
    /// INSERT has none).
    var isAnnotated: Bool { !origins.isEmpty || !traces.isEmpty || !keys.isEmpty || !expiries.isEmpty }
    /// One per event, '' for none: for the INSERT that takes them all.
    var filledOrigins: [String] { origins.isEmpty ? Array(repeating: "", count: streams.count) : origins }
    var filledTraces: [String] { traces.isEmpty ? Array(repeating: "", count: streams.count) : traces }
    var filledKeys: [String] { keys.isEmpty ? Array(repeating: "", count: streams.count) : keys }
    var filledExpiries: [Int64] { expiries.isEmpty ? Array(repeating: 0, count: streams.count) : expiries }

    mutating func append(
        stream: Int64, sequence: Int64, millis: Int64, payload: Data, origin: String?, trace: TraceParent?, key: EventKey?,
        expiresAt: Int64?, hash: EventHash
    ) {
        Self.note(origin, in: &origins, before: streams.count, none: "")
        Self.note(trace?.text, in: &traces, before: streams.count, none: "")
        Self.note(key?.text, in: &keys, before: streams.count, none: "")
        Self.note(expiresAt, in: &expiries, before: streams.count, none: 0)
        streams.append(stream)
        sequences.append(sequence)
        times.append(millis)
        payloads.append(ByteBuffer(bytes: payload))
        hashes.append(hash.withUnsafeBytes { ByteBuffer(bytes: $0) })
        bytes += payload.count
    }

    /// Keeps a column that stays empty until its first value (then `none` for every event
    /// before, and for each without one).
    private static func note<Value>(_ value: Value?, in column: inout [Value], before count: Int, none: Value) {
        if let value {
            if column.isEmpty { column = Array(repeating: none, count: count) }
            column.append(value)
        } else if !column.isEmpty {
            column.append(none)
        }
    }
}
