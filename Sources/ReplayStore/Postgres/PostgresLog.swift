import Foundation
import Logging
import NIOCore
import PostgresNIO
import ReplayModel
import ReplaySync

/// Streams in a PostgreSQL database that several daemons share. Each daemon keeps its own
/// catalog, one writer with group commit, and its cursors; the database orders the writes
/// (see `PostgresTransaction`) and tells the others of each commit:
///
/// - After each commit the writer sends `NOTIFY replay_commits` with the names it changed
///   (inside the transaction, so it goes out with the commit, never before).
/// - A LISTEN session gives every other daemon's notifications to this writer as a
///   `refresh` request: the rows are read again, in order with this daemon's own writes,
///   and the hubs wake their cursors, which read the new events from the database.
/// - An acknowledgement goes out only after PostgreSQL's COMMIT returned, with
///   `synchronous_commit` on (`Durability.full`).
///
/// A lost server fails the batch in flight with `storage_unavailable` (nothing is counted
/// as committed that PostgreSQL did not confirm) and the next batch connects again.
final class PostgresLog: LogDatabase {
    static let channel = "replay_commits"

    let catalog: Catalog
    let location: PostgresLocation
    private let writerSession: PostgresSession
    private let readers: [PostgresSession]
    private let nextReader = Locked(0)
    private let listeners: CommitListeners
    private let producerExpiry = ProducerExpiry()
    private let waiting: WaitingMembers
    private let alarm: ScheduledAlarm
    private let now: @Sendable () -> Date
    /// How an append's unknown stream is created (`EventStore.Options.autoCreate`).
    private let autoCreate: StreamConfig?
    private let logger: Logger
    /// This daemon's name in notifications, so it skips its own.
    private let origin = UUID().uuidString
    private let listening = Locked<Task<Void, Never>?>(nil)
    /// The stream rows as this daemon last saw them (the writer's thread alone uses it).
    private let rowVersions = Locked(RowVersions())
    /// The writer's connection on which its prepared statements are ready (`writerConnection`).
    private let preparedOn = Locked<PostgresConnection.ID?>(nil)
    /// The writer's connection on which a transaction is open, chained from the last commit
    /// (`PostgresTransaction.commit(notifying:chain:)`): the next batch sends no `BEGIN`, and an
    /// idle writer ends it (`writerIdle`).
    private let chainedOn = Locked<PostgresConnection.ID?>(nil)
    /// Batches that ran in a transaction chained from the commit before them.
    let chainedBatches = Locked(0)
    /// The writer whose queue says whether a commit chains the next transaction.
    private let writer = Locked<WriteQueue?>(nil)
    /// Batches since the writer was last idle: from the second on, the writer is under
    /// continuous load, and its next batch all but certainly follows.
    private let batchesSinceIdle = Locked(0)

    init(_ location: PostgresLocation, options: EventStore.Options, listeners: CommitListeners, now: @escaping @Sendable () -> Date) throws(StoreError) {
        if let failure = location.failure { throw .invalidConfig(failure) }
        var location = location
        // Acknowledged means committed: a commit waits for the WAL flush (and for synchronous
        // standbys, where the server has them) unless durability is relaxed.
        var configuration = location.configuration
        configuration.options.additionalStartupParameters = [
            ("synchronous_commit", options.durability == .full ? "on" : "off"), ("application_name", "replayd"),
        ]
        location = PostgresLocation(configuration: configuration, redacted: location.redacted)
        self.location = location
        self.listeners = listeners
        self.now = now
        autoCreate = options.autoCreate
        waiting = WaitingMembers(now: now)
        var logger = Logger(label: "replay.postgres")
        logger.logLevel = .warning
        self.logger = logger
        writerSession = PostgresSession(location, logger: logger)
        sourceSession = PostgresSession(location, logger: logger)
        let readers = (0..<max(1, options.readerCount)).map { _ in PostgresSession(location, logger: logger) }
        self.readers = readers
        // Other daemons' scheduled events are found within a second (see `ScheduledAlarm`),
        // by a read on a reader's session.
        alarm = ScheduledAlarm(
            now: now,
            poll: .init(millis: 1_000) {
                let rows = try readers[0].query("SELECT min(due_at) FROM scheduled_events")
                return try rows.rows.first?.decode(Int64?.self)
            })
        do {
            try PostgresMigrations.migrate(writerSession, location: location.redacted)
            var versions: [Int64: Int64] = [:]
            catalog = Catalog(Array(try Self.loadAll(writerSession, versions: &versions).values))
            rowVersions.withLock { $0.learn(versions) }
        } catch {
            writerSession.close()
            throw StoreError(postgres: error)
        }
    }

    /// Every stream with its consumers; each row's version goes to `versions`.
    static func loadAll(_ session: PostgresSession, versions: inout [Int64: Int64]) throws -> [String: Catalog.Record] {
        let rows = try session.query(
            PostgresQuery(
                unsafeSQL: """
                    SELECT \(PostgresTransaction.streamColumns) FROM streams s LEFT JOIN streams src ON src.id = s.fork_of
                    """))
        return try PostgresTransaction.loadRecords(rows.rows, session, versions: &versions)
    }

    // MARK: Writes

    func commit(_ batch: [WriteRequest]) {
        let started = ContinuousClock.now
        batchesSinceIdle.withLock { $0 += 1 }
        if batch.allSatisfy(Self.mayRunOnCachedRows), commitOnCachedRows(batch, started: started) { return }
        // A deadlock with a writer outside replay's lock order, or a serialization failure,
        // undoes the whole transaction: run the batch again from the start.
        for attempt in 1... {
            let connection: PinnedConnection
            do {
                connection = try writerConnection()
            } catch {
                return WriterRules<PostgresTransaction>.failed(batch, StoreError(postgres: error), waiting: waiting)
            }
            let transaction = PostgresTransaction(connection, chained: isChained(connection))
            let (rules, failure) = run(batch, in: transaction)
            if let error = failure {
                if !connection.connection.isClosed { _ = try? connection.query("ROLLBACK") }
                chainedOn.withLock { $0 = nil }
                rowVersions.withLock { $0.forget(rules.streams.map(\.record.id)) }
                if attempt < 5, let state = (error as? PSQLError)?.serverInfo?[.sqlState], ["40P01", "40001"].contains(state) { continue }
                logger.warning("commit failed: \(String(reflecting: error))")
                return WriterRules<PostgresTransaction>.failed(batch, StoreError(postgres: error), waiting: waiting)
            }
            StoreMetrics.lockedRowCommits.increment()
            return committed(batch, transaction, on: connection, rules, started: started)
        }
    }

    /// The writer's connection, with its prepared statements ready: on a new connection
    /// they are prepared first, outside any transaction (see `StreamRowUpdate.preparation`).
    private func writerConnection() throws -> PinnedConnection {
        let connection = PinnedConnection(try writerSession.connected())
        if preparedOn.value != connection.connection.id {
            try connection.query(StreamRowUpdate.preparation)
            preparedOn.withLock { $0 = connection.connection.id }
        }
        return connection
    }

    /// Requests a batch may run on the rows as this daemon last saw them
    /// (`RowVersions`): appends without a producer (a producer's state is a row of its
    /// own, read under its stream's lock) to streams that exist, and the reads of another
    /// daemon's commits (which come with nearly every batch where two daemons publish).
    private static func mayRunOnCachedRows(_ request: WriteRequest) -> Bool {
        switch request {
        case .appendWithCompletion, .barrier, .refresh: true
        case .appendToSink(_, _, let conditions, _, _): conditions.producer == nil
        case .streamWrite(let write, _): write.producer == nil && write.create == nil && write.creator == nil && write.fork == nil
        default: false
        }
    }

    /// The batch on the rows as this daemon last saw them, without the locks: `BEGIN`, one
    /// statement per stream, `COMMIT`, and a wait for the `COMMIT` alone. Whether it is
    /// done (committed, or failed for a reason the locks would not change); `false`: it
    /// needs the locks (a stream it may not write so, found before anything was sent, or a
    /// row another daemon wrote meanwhile, found by PostgreSQL), and nothing of it stayed.
    private func commitOnCachedRows(_ batch: [WriteRequest], started: ContinuousClock.Instant) -> Bool {
        let connection: PinnedConnection
        do {
            connection = try writerConnection()
        } catch {
            // The locked batch would connect again and fail the same way, twice as late.
            WriterRules<PostgresTransaction>.failed(batch, StoreError(postgres: error), waiting: waiting)
            return true
        }
        let transaction = PostgresTransaction(connection, mode: .cached(rowVersions, at: .now), chained: isChained(connection))
        let (rules, failure) = run(batch, in: transaction)
        if let error = failure {
            if transaction.began {
                if !connection.connection.isClosed { _ = try? connection.query("ROLLBACK") }
                chainedOn.withLock { $0 = nil }
            }
            if error is PostgresTransaction.NeedsLocks { return false }
            let streams = rules.streams.map(\.record.id)
            if let state = (error as? PSQLError)?.serverInfo?[.sqlState], ["RP001", "23505"].contains(state) {
                // Another daemon wrote one of the rows: this batch, and its streams' next
                // ones for a while, take the locks.
                rowVersions.withLock { $0.contended(streams, at: .now) }
                StoreMetrics.cachedRowConflicts.increment()
                return false
            }
            rowVersions.withLock { $0.forget(streams) }
            logger.warning("commit failed: \(String(reflecting: error))")
            WriterRules<PostgresTransaction>.failed(batch, StoreError(postgres: error), waiting: waiting)
            return true
        }
        if transaction.began { StoreMetrics.cachedRowCommits.increment() }
        committed(batch, transaction, on: connection, rules, started: started)
        return true
    }

    /// Whether a commit chains the next transaction (`PostgresTransaction.commit`): when
    /// the next batch is already waiting, or the writer is under continuous load. Requests
    /// that arrive while a batch's statements are on their way have often not been queued
    /// yet when its `COMMIT` is sent, so the queue alone misses most of a busy writer's
    /// batches. A wrong guess costs a `COMMIT` once the writer is idle, off any request's
    /// path.
    private var nextBatchExpected: Bool {
        batchesSinceIdle.value > 1 || writer.value?.hasPending == true
    }

    private func isChained(_ connection: PinnedConnection) -> Bool {
        chainedOn.value == connection.connection.id
    }

    /// Ends the transaction the last commit chained, so that an idle writer leaves none
    /// open. Not waited for: a batch that comes meanwhile queues its statements behind it
    /// on the connection, and begins a transaction of its own.
    func writerIdle() {
        batchesSinceIdle.withLock { $0 = 0 }
        let open = chainedOn.withLock { id in
            defer { id = nil }
            return id
        }
        guard let open, let connection = writerSession.current, connection.id == open, !connection.isClosed else { return }
        connection.query("COMMIT", logger: logger).whenComplete { _ in }
    }

    /// The batch's rules run in `transaction`, and its commit: the rules as they ran, and
    /// what failed (nothing: committed).
    private func run(_ batch: [WriteRequest], in transaction: PostgresTransaction) -> (WriterRules<PostgresTransaction>, (any Error)?) {
        var rules = WriterRules(
            catalog: catalog, db: transaction, time: now(), autoCreate: autoCreate, producerExpiry: producerExpiry, waiting: waiting,
            alarm: alarm)
        rules.liveReaders = listeners.haveLiveReaders
        do {
            try rules.run(batch)
            try transaction.commit(notifying: notice(rules), chain: nextBatchExpected)
            return (rules, nil)
        } catch {
            return (rules, error)
        }
    }

    /// After a commit: the rows' versions as it left them (the streams another daemon
    /// changed are contended), then the catalog, listeners and requests.
    private func committed(
        _ batch: [WriteRequest], _ transaction: PostgresTransaction, on connection: PinnedConnection,
        _ rules: WriterRules<PostgresTransaction>, started: ContinuousClock.Instant
    ) {
        if transaction.chained, transaction.began { chainedBatches.withLock { $0 += 1 } }
        chainedOn.withLock { $0 = transaction.leavesTransactionOpen ? connection.connection.id : nil }
        let refreshed = rules.refreshed.values.compactMap { $0?.id }
        rowVersions.withLock { versions in
            versions.learn(transaction.rowVersions())
            versions.contended(refreshed, at: .now)
        }
        rules.committed(batch, started: started, listeners: listeners)
    }

    /// What the other daemons are told of the batch: the streams it changed, and the new
    /// bounds of those whose rows it changed in nothing else (the catalog still holds the
    /// rows as they were before the batch).
    private func notice(_ rules: WriterRules<PostgresTransaction>) -> String? {
        let changed = rules.announced
        guard !changed.isEmpty else { return nil }
        var bounds: [String: StreamBounds] = [:]
        for (name, index) in rules.indexByName where !rules.deleted.contains(name) {
            bounds[name] = StreamBounds.onlyChange(from: catalog[name], to: rules.streams[index].record)
        }
        return CommitNotice(origin: origin, streams: changed, bounds: bounds).payload
    }

    /// Starts following the other daemons' commits; their notifications become `refresh`
    /// requests of `writer`.
    func start(writer: WriteQueue) {
        waiting.start(writer: writer)
        self.writer.withLock { $0 = writer }
        alarm.start(writer: writer)
        let location = location
        let origin = origin
        let logger = logger
        let catalog = catalog
        let task = Task.detached {
            var backoff: Duration = .milliseconds(100)
            while !Task.isCancelled {
                do {
                    let connection = try await PostgresConnection.connect(configuration: location.configuration, id: 0, logger: logger)
                    do {
                        try await connection.listen(on: Self.channel) { notifications in
                            StoreMetrics.postgresConnected.record(1)
                            // Commits made while this session was away were not told: read every stream again.
                            let stored = try await Self.streamNames(connection, logger)
                            writer.submit(.refresh(streams: Set(catalog.all.map(\.info.name)).union(stored).sorted()))
                            backoff = .milliseconds(100)
                            for try await notification in notifications {
                                guard !CommitNotice.isOwn(notification.payload, origin: origin),
                                    let notice = CommitNotice(payload: notification.payload)
                                else { continue }
                                if let streams = notice.streamsToRead {
                                    writer.submit(.refresh(streams: streams, bounds: notice.bounds))
                                } else {
                                    let stored = try await Self.streamNames(connection, logger)
                                    writer.submit(.refresh(streams: Set(catalog.all.map(\.info.name)).union(stored).sorted()))
                                }
                            }
                        }
                    } catch  where !Task.isCancelled {
                        StoreMetrics.postgresConnected.record(0)
                        logger.warning("LISTEN session lost: \(String(reflecting: error))")
                    } catch {}
                    try? await connection.close()
                } catch  where !Task.isCancelled {
                    StoreMetrics.postgresConnected.record(0)
                    logger.warning("LISTEN session cannot connect: \(String(reflecting: error))")
                } catch {}
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(5))
            }
        }
        listening.withLock { $0 = task }
    }

    private static func streamNames(_ connection: PostgresConnection, _ logger: Logger) async throws -> Set<String> {
        var names = Set<String>()
        for try await name in try await connection.query("SELECT name FROM streams", logger: logger).decode(String.self) {
            names.insert(name)
        }
        return names
    }

    // MARK: Reads

    /// A reader session, round robin.
    private func withReader<T>(_ body: (PostgresSession) throws -> T) throws(StoreError) -> T {
        let session = readers[
            nextReader.withLock { index in
                defer { index = (index + 1) % readers.count }
                return index
            }]
        do { return try body(session) } catch { throw StoreError(postgres: error) }
    }

    func forEachEvent(
        _ segments: LogSegments, limit: Int, byteBudget: Int, includingExpired: Bool,
        _ body: EventVisitor
    ) throws(StoreError) {
        let expiredBy = includingExpired ? Int64.min : Timestamp.millis(now())
        try withReader { session in
            try PostgresTransaction.forEachEvent(segments, limit: limit, byteBudget: byteBudget, expiredBy: expiredBy, session, body)
        }
    }

    /// The lookup and the read are two statements, each its own snapshot: an event that
    /// retention removed between them is looked up again.
    func latestEvent(withKey key: EventKey, in segments: LogSegments) throws(StoreError) -> StoredEvent? {
        try withReader { session in
            for _ in 0..<3 {
                var looked = false
                for segment in segments.segments.reversed() {
                    let rows = try session.query(
                        """
                        SELECT max(seq) FROM event_log WHERE stream_id = \(segment.streamID) AND event_key = \(key.text)
                            AND seq BETWEEN \(Int64(segment.from)) AND \(Int64(min(segment.through, UInt64(Int64.max))))
                        """)
                    guard let sequence = try rows.rows.first?.decode(Int64?.self) else { continue }
                    var found: StoredEvent?
                    try PostgresTransaction.forEachEvent(
                        .single(UInt64(sequence), of: segment), limit: 1, byteBudget: .max, expiredBy: Timestamp.millis(now()), session
                    ) {
                        sequence, time, payload, trace, hash, key in
                        found = StoredEvent(sequence: sequence, time: time, payload: payload, traceParent: trace, hash: hash, key: key)
                    }
                    if let found { return found }
                    looked = true
                    break
                }
                if !looked { return nil }
            }
            return nil
        }
    }

    func currentEvents(in segments: LogSegments, limit: Int) throws(StoreError) -> [UInt64] {
        try withReader { session in
            var current = CurrentEvents()
            for segment in segments.segments.reversed() {
                // The stream's keys one index descent each (a loose index scan), then each
                // one's newest event: K lookups for K keys, not a read of every event. (The
                // limit goes on the outer query: PostgreSQL refuses one inside a recursive
                // term, and evaluates the recursion only as far as the outer query reads.)
                let (id, from, through) = (segment.streamID, Int64(segment.from), Int64(min(segment.through, UInt64(Int64.max))))
                let rows = try session.query(
                    """
                    WITH RECURSIVE keys(name) AS (
                        SELECT (SELECT min(event_key) FROM event_log
                                WHERE stream_id = \(id) AND event_key IS NOT NULL AND seq BETWEEN \(from) AND \(through))
                        UNION ALL
                        SELECT (SELECT min(event_key) FROM event_log
                                WHERE stream_id = \(id) AND event_key > keys.name AND seq BETWEEN \(from) AND \(through))
                        FROM keys WHERE keys.name IS NOT NULL
                    ),
                    newest AS (
                        SELECT name, (SELECT max(seq) FROM event_log
                                      WHERE stream_id = \(id) AND event_key = keys.name AND seq BETWEEN \(from) AND \(through)) AS seq
                        FROM keys WHERE name IS NOT NULL LIMIT \(Int64(clamping: limit))
                    )
                    SELECT name, seq, (SELECT octet_length(payload) FROM event_log WHERE stream_id = \(id) AND seq = newest.seq)::bigint
                    FROM newest
                    """)
                for row in rows.rows {
                    let (key, sequence, bytes) = try row.decode((String, Int64, Int64).self)
                    current.add(key: key, sequence: UInt64(sequence), payloadBytes: Int(bytes))
                }
            }
            return current.ordered
        }
    }

    func forEachEvent(eachOf reads: [LogSegments], byteBudget: Int, _ body: EventVisitor) throws(StoreError) -> Int {
        try withReader { session in
            try LogSegments.readEach(reads, byteBudget: byteBudget, body) { read, visit in
                try PostgresTransaction.forEachEvent(read, limit: .max, byteBudget: .max, expiredBy: Timestamp.millis(now()), session, visit)
            }
        }
    }

    func subscriptions(id: String?) throws(StoreError) -> [SubscriptionRow] {
        try withReader { session in try PostgresTransaction.subscriptions(id: id, session) }
    }

    func scheduledEvents(of stream: Int64, name: String, limit: Int) throws(StoreError) -> [ScheduledEvent] {
        try withReader { session in try PostgresTransaction.scheduledEvents(of: stream, name: name, limit: limit, session) }
    }

    func lastSourceTick(of stream: Int64) throws(StoreError) -> Int64? {
        try withReader { session in try PostgresTransaction.lastSourceTick(of: stream, session) }
    }

    func derivations() throws(StoreError) -> [Derivation] {
        try withReader { session in try PostgresTransaction.derivations(session) }
    }

    func firstSequence(of record: Catalog.Record, atOrAfter millis: Int64) throws(StoreError) -> UInt64 {
        try withReader { session in
            let rows = try session.query("SELECT first_seq, last_seq FROM streams WHERE id = \(record.id)")
            guard let row = rows.rows.first else { return record.info.lastSequence + 1 }
            let (first, last) = try row.decode((Int64, Int64).self)
            guard first <= last else { return UInt64(last) + 1 }
            return try PostgresTransaction.firstSequence(of: record.id, in: UInt64(first)...UInt64(last), atOrAfter: millis, session)
        }
    }

    func compactionRows(of stream: Int64, from: UInt64, through: UInt64, limit: Int) throws(StoreError) -> [CompactionRow] {
        try withReader { session in try Self.compactionRows(of: stream, from: from, through: through, limit: limit, session) }
    }

    /// Each key of the page's newest event is one descent of `event_log_by_event_key`.
    static func compactionRows(of stream: Int64, from: UInt64, through: UInt64, limit: Int, _ session: some PostgresQuerying) throws -> [CompactionRow] {
        let rows = try session.query(
            """
            WITH page AS (
                SELECT seq, event_key, length(payload)::bigint AS size, time FROM event_log
                WHERE stream_id = \(stream) AND seq BETWEEN \(Int64(from)) AND \(Int64(through)) ORDER BY seq LIMIT \(limit)),
            newest AS (
                SELECT k.event_key, (SELECT max(n.seq) FROM event_log n WHERE n.stream_id = \(stream) AND n.event_key = k.event_key) AS seq
                FROM (SELECT DISTINCT event_key FROM page WHERE event_key IS NOT NULL) AS k)
            SELECT p.seq, n.seq, p.size, p.time FROM page AS p LEFT JOIN newest AS n USING (event_key) ORDER BY p.seq
            """)
        return try rows.rows.map { row in
            let (sequence, newest, size, millis) = try row.decode((Int64, Int64?, Int64, Int64).self)
            return CompactionRow(sequence: UInt64(sequence), newest: newest.map(UInt64.init), size: Int(size), millis: millis)
        }
    }

    func nextExpiry() throws(StoreError) -> Int64? {
        try withReader { session in
            let rows = try session.query("SELECT min(expires_at) FROM event_log WHERE expires_at IS NOT NULL")
            return try rows.rows.first?.decode(Int64?.self) ?? nil
        }
    }

    func hole(of stream: Int64, containing sequence: UInt64) throws(StoreError) -> EventHole? {
        try withReader { session in try PostgresTransaction.hole(of: stream, containing: sequence, session) }
    }

    // MARK: Sources

    /// The session whose advisory locks say which sources this daemon runs: a lock dies
    /// with its session, so a daemon that dies (or loses its host) frees its sources for
    /// the others without any protocol of replay's own.
    private let sourceSession: PostgresSession

    /// The connection each claim was made on: a claim holds while that connection does.
    private let claims = Locked<[String: ObjectIdentifier]>([:])
    var isShared: Bool { true }

    func holdsSource(_ stream: String) -> Bool {
        guard let claimedOn = claims.withLock({ $0[stream] }), let current = sourceSession.current, !current.isClosed else { return false }
        return ObjectIdentifier(current) == claimedOn
    }

    /// PostgreSQL's own tools copy its databases, consistently and online, and better than
    /// the daemon could: a copy of one database's tables would miss its roles and settings.
    func backup(to path: String) throws(StoreError) -> [(stream: String, lastSequence: UInt64)] {
        throw .backupRefused(
            "a PostgreSQL store is backed up with PostgreSQL's tools: pg_dump, or a base backup with WAL archiving (docs/POSTGRES.md, \"Backups\")")
    }

    func claimSource(_ stream: String) -> Bool {
        do {
            let connection = try sourceSession.connected()
            let rows = try sourceSession.query("SELECT pg_try_advisory_lock(hashtextextended(\("source:" + stream), 0))")
            guard try rows.rows.first?.decode(Bool.self) == true else { return false }
            // The previous holder may have ended the stream just before letting go, and this
            // daemon's catalog may not know yet: the database says.
            let ended = try sourceSession.query("SELECT count(*) FROM streams WHERE name = \(stream) AND terminal IS NOT NULL")
            guard try ended.rows.first?.decode(Int64.self) == 0 else {
                releaseSource(stream)
                return false
            }
            claims.withLock { $0[stream] = ObjectIdentifier(connection) }
            return true
        } catch {
            logger.warning("cannot claim the source of '\(stream)': \(String(reflecting: error))")
            return false
        }
    }

    func releaseSource(_ stream: String) {
        claims.withLock { _ = $0.removeValue(forKey: stream) }
        _ = try? sourceSession.query("SELECT pg_advisory_unlock(hashtextextended(\("source:" + stream), 0))")
    }

    func close() {
        waiting.close()
        alarm.close()
        writer.withLock { $0 = nil }
        listening.withLock { $0 }?.cancel()
        sourceSession.close()
        writerSession.close()
        for reader in readers { reader.close() }
    }
}

/// What a commit tells the other daemons: who committed, the streams it changed (`nil`:
/// too many to list within NOTIFY's 8000 bytes, read them all), and the new bounds of
/// those it changed in nothing else, which they need not read (`StreamBounds`).
///
/// The payload is lines: the origin, each stream's name, then a line per stream with
/// bounds, `<name> <id> <first> <last> <bytes> <last time>`. Names hold no spaces, so the
/// two kinds of line cannot be confused; and a daemon of the previous version, which
/// takes every line after the first as a name, still reads each stream's row as it did
/// (it also looks a bounds line up as a name, finds no such stream, and goes on).
struct CommitNotice: Equatable {
    let origin: String
    let streams: [String]?
    let bounds: [String: StreamBounds]

    static let maxPayload = 7000

    init(origin: String, streams: some Collection<String>, bounds: [String: StreamBounds] = [:]) {
        self.origin = origin
        let listed = streams.sorted()
        let size = listed.reduce(0) { $0 + $1.utf8.count + 1 }
        self.streams = size < Self.maxPayload ? listed : nil
        let boundsSize = bounds.reduce(0) { $0 + Self.line($1.key, $1.value).utf8.count + 1 }
        self.bounds = self.streams != nil && size + boundsSize < Self.maxPayload ? bounds : [:]
    }

    var payload: String {
        let boundLines = bounds.keys.sorted().map { Self.line($0, bounds[$0]!) }
        return ([origin] + (streams ?? ["*"]) + boundLines).joined(separator: "\n")
    }

    /// Whether `payload` is a notice of `origin`'s own commit, from its first line alone.
    /// Every session listening on the channel hears every NOTIFY, its own daemon's too:
    /// where two daemons publish, half of what each hears is its own, and parsing every
    /// notice whole before looking at its origin took 4 % of the daemons' CPU.
    static func isOwn(_ payload: String, origin: String) -> Bool {
        let bytes = payload.utf8
        guard bytes.starts(with: origin.utf8) else { return false }
        let end = bytes.index(bytes.startIndex, offsetBy: origin.utf8.count)
        return end == bytes.endIndex || bytes[end] == UInt8(ascii: "\n")
    }

    init?(payload: String) {
        let lines = payload.split(separator: "\n", omittingEmptySubsequences: false)
        guard let origin = lines.first, !origin.isEmpty else { return nil }
        self.origin = String(origin)
        var names: [String] = []
        var bounds: [String: StreamBounds] = [:]
        for line in lines.dropFirst() {
            // Bytes, not `contains(" ")`, which on a substring is Foundation's search
            // through CFString.
            if line.utf8.contains(UInt8(ascii: " ")) {
                // A line this version cannot read is left out: the stream's row is read.
                if let (name, parsed) = Self.bounds(line) { bounds[name] = parsed }
            } else {
                names.append(String(line))
            }
        }
        streams = names == ["*"] ? nil : names
        let listed = Set(streams ?? [])
        self.bounds = bounds.filter { listed.contains($0.key) }
    }

    /// The streams whose rows a daemon told of this notice must read: those listed without
    /// their bounds.
    var streamsToRead: [String]? {
        streams.map { $0.filter { bounds[$0] == nil } }
    }

    private static func line(_ name: String, _ bounds: StreamBounds) -> String {
        "\(name) \(bounds.id) \(bounds.firstSequence) \(bounds.lastSequence) \(bounds.byteCount) \(bounds.lastTime) \(bounds.chainHead.hex) \(bounds.chainBase.hex)"
    }

    private static func bounds(_ line: Substring) -> (String, StreamBounds)? {
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 8, let id = Int64(fields[1]), let first = UInt64(fields[2]), let last = UInt64(fields[3]),
            let bytes = Int(fields[4]), let lastTime = Int64(fields[5]), let head = EventHash(hex: fields[6]),
            let base = EventHash(hex: fields[7])
        else { return nil }
        return (
            String(fields[0]),
            StreamBounds(
                id: id, firstSequence: first, lastSequence: last, byteCount: bytes, lastTime: lastTime, chainHead: head, chainBase: base)
        )
    }
}

extension StoreError {
    /// Maps an error from PostgreSQL (or the way to it) to the store's vocabulary: a
    /// refused connection or a lost server is `unavailable`, a full disk `storageFull`.
    init(postgres error: any Error) {
        if let error = error as? StoreError {
            self = error
            return
        }
        guard let error = error as? PSQLError else {
            self = .unavailable("\(error)")
            return
        }
        let state = error.serverInfo?[.sqlState]
        let message = error.serverInfo?[.message] ?? "\(error.code)"
        switch state {
        case "53100": self = .storageFull
        default: self = .unavailable(state.map { "PostgreSQL \($0): \(message)" } ?? "PostgreSQL: \(message)")
        }
    }
}

extension PostgresLocation {
    init(configuration: PostgresConnection.Configuration, redacted: String) {
        self.configuration = configuration
        self.redacted = redacted
        self.failure = nil
    }
}
