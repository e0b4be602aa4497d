import Foundation
import GRDB
import ReplayModel
import ReplaySync

/// Streams of events in one database: the durable replay buffer. The embedded default is
/// one SQLite file; a PostgreSQL server lets several daemons share the same streams.
///
/// Every stream is a log with per-stream sequence numbers (from 1, contiguous, never
/// reused), retention limits, and an optional terminal event. One writer batches all
/// writes into group commits; a write completes only after its transaction committed.
///
/// ```swift
/// let store = try EventStore(path: "/tmp/replay.sqlite")
/// _ = try await store.create("orders", config: StreamConfig(capacity: 1000))
/// let event = try await store.append(Data("{\"id\":1}".utf8), to: "orders")
/// print(event.sequence)                                 // 1
/// print(try store.read("orders", from: 1).count)        // 1
/// ```
public final class EventStore: Sendable {
    public struct Options: Sendable {
        public var durability: Durability
        /// The settings of a stream created by its first append (`nil`: no auto-creation).
        public var autoCreate: StreamConfig?
        /// Readers for catch-up and queries.
        public var readerCount: Int

        public init(durability: Durability = .full, autoCreate: StreamConfig? = nil, readerCount: Int = 4) {
            self.durability = durability
            self.autoCreate = autoCreate
            self.readerCount = readerCount
        }
    }

    /// Where the streams are: the SQLite file's path, or the PostgreSQL URL without its password.
    public let location: String
    public let options: Options
    let log: any LogDatabase
    /// Whether a backup is running (`backup(to:)`).
    private let backingUp = Locked(false)
    /// The same database when it is a SQLite file, for diagnostics (`query`).
    private let sqlite: SQLiteLog?
    let catalog: Catalog
    private let listeners: CommitListeners
    let writer: WriteQueue
    let clock: @Sendable () -> Date
    /// Whether `close` has run: the database is released once (a second SQLite close
    /// reached its checkpoint with the connection already closed, and crashed).
    private let closed = Locked(false)

    /// Opens (creating if needed) the SQLite database at `path`, upgrading its schema in place.
    ///
    /// Throws `StoreError.notADatabase`, `.readOnly`, `.locked` (another replay process has
    /// it open) or `.newerSchema`, never crashes on a bad file.
    public convenience init(path: String, options: Options = Options(), clock: @escaping @Sendable () -> Date = Date.init) throws(StoreError) {
        let listeners = CommitListeners()
        let log = try SQLiteLog(path: path, options: options, listeners: listeners, now: clock)
        self.init(log: log, sqlite: log, location: path, listeners: listeners, options: options, clock: clock)
    }

    /// Opens the store `location` names: a `postgres://` or `postgresql://` URL (the
    /// streams several daemons share, see `PostgresLog`), else a SQLite file's path.
    public convenience init(location: String, options: Options = Options(), clock: @escaping @Sendable () -> Date = Date.init) throws(StoreError) {
        guard let url = PostgresLocation(location) else {
            try self.init(path: location, options: options, clock: clock)
            return
        }
        let listeners = CommitListeners()
        let log = try PostgresLog(url, options: options, listeners: listeners, now: clock)
        self.init(log: log, sqlite: nil, location: url.redacted, listeners: listeners, options: options, clock: clock)
    }

    private init(
        log: any LogDatabase, sqlite: SQLiteLog?, location: String, listeners: CommitListeners, options: Options,
        clock: @escaping @Sendable () -> Date
    ) {
        self.location = location
        self.options = options
        self.log = log
        self.sqlite = sqlite
        self.catalog = log.catalog
        self.listeners = listeners
        self.clock = clock
        writer = WriteQueue(limits: .init(), commit: { batch in log.commit(batch) }, idle: { log.writerIdle() })
        log.start(writer: writer)
    }

    /// Whether `location` names a PostgreSQL server rather than a SQLite file.
    public static func isPostgres(_ location: String) -> Bool { PostgresLocation(location) != nil }

    // MARK: Metadata (memory only, never waits)

    /// The stream's metadata, or `nil` if there is no such stream.
    public func info(_ name: String) -> StreamInfo? {
        catalog[name]?.info
    }

    /// The metadata of several streams as of one commit: no commit lands between two of
    /// them, so their last sequence numbers are a cut of the log. `nil` for one that does
    /// not exist.
    public func infos(_ names: [String]) -> [StreamInfo?] {
        catalog.records(names).map { $0?.info }
    }

    /// Every stream, by name (as of one commit).
    public var streams: [StreamInfo] {
        catalog.all.map(\.info)
    }

    /// Whether the stream has passed its expiry (`StreamConfig.expiry`); the writer deletes
    /// it at its next retention pass, and until then it should be treated as gone.
    public func isExpired(_ name: String) -> Bool {
        guard let record = catalog[name], let deadline = catalog.deadline(of: record) else { return false }
        return Timestamp.millis(clock()) >= deadline
    }

    /// Notes a read, which restarts a time-to-live's countdown.
    public func noteRead(_ name: String) {
        guard catalog[name]?.info.config.expiry?.idleSeconds != nil else { return }
        catalog.noteRead(name, at: Timestamp.millis(clock()))
    }

    /// Calls `listener` after every commit, on the writer's thread, in commit order.
    public func onCommit(_ listener: @escaping @Sendable (CommitBatch) -> Void) {
        listeners.add(listener)
    }

    /// Tells the store whether this process reads a stream live. On a database several
    /// daemons share, another daemon's new events are read back once for this daemon's
    /// live readers (into the hubs' tail rings); a stream no one here reads is not read back
    /// (its row is, for the catalog), and a reader that arrives later reads from the
    /// database. Read on the writer's thread: must not block.
    public func setLiveReaders(_ haveLiveReaders: @escaping @Sendable (String) -> Bool) {
        listeners.setLiveReaders(haveLiveReaders)
    }

    // MARK: Writes (group-committed; completions run on the writer's thread after commit)

    /// Appends an event; completes with its sequence number and time once committed.
    /// An unknown stream is created with `Options.autoCreate` if set.
    public func append(_ payload: Data, to stream: String, completion: @escaping @Sendable (Result<StoredEvent, StoreError>) -> Void) {
        writer.submit(.appendWithCompletion(stream: stream, payload: payload, completion))
    }

    /// Appends an event; its result goes to `sink`, with the other results the sink is owed
    /// from the same group commit, once that transaction committed. `token` comes back
    /// with the result. An unknown stream is created with `Options.autoCreate` if set.
    public func append(_ payload: Data, to stream: String, conditions: AppendConditions = .none, sink: any AppendSink, token: UInt64) {
        writer.submit(.appendToSink(stream: stream, payload: payload, conditions: conditions, sink: sink, token: token))
    }

    /// Appends `events` all together or not at all (contiguous in each stream); one result
    /// goes to `sink`, with every event's sequence number in order. Unknown streams are
    /// created with `Options.autoCreate` if set.
    public func appendAtomically(_ events: [AtomicAppend], sink: any AppendSink, token: UInt64) {
        writer.submit(.atomic(events: events, sink: sink, token: token))
    }

    /// Does `write` as one unit (see `StreamWrite`); completes once it is committed.
    public func write(_ write: StreamWrite, completion: @escaping @Sendable (Result<StreamWriteOutcome, StoreError>) -> Void) {
        writer.submit(.streamWrite(write, completion))
    }

    // MARK: Durable consumers (positions kept with the durability of publishes)

    /// Where the durable consumer `name` of `stream` resumes; on first use it is created
    /// acknowledged up to `initialNext(info) - 1`, computed from the stream as it then is.
    public func openConsumer(
        _ name: String, of stream: String, initialNext: @escaping @Sendable (StreamInfo) -> UInt64,
        completion: @escaping @Sendable (Result<ConsumerStart, StoreError>) -> Void
    ) {
        openConsumer(name, of: stream, first: .next(initialNext), completion: completion)
    }

    /// A durable consumer's position: after what it acknowledged, or at `first` on its
    /// first use (a `since` time is looked up by the writer, in request order).
    public func openConsumer(
        _ name: String, of stream: String, first: FirstPosition, completion: @escaping @Sendable (Result<ConsumerStart, StoreError>) -> Void
    ) {
        writer.submit(.openConsumer(stream: stream, name: name, first: first, completion))
    }

    /// Acknowledges every event up to `sequence` for the consumer; completes once that is
    /// committed. Never backwards, never past the stream's last sequence number.
    public func acknowledge(_ sequence: UInt64, consumer: String, of stream: String, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        writer.submit(.acknowledge(stream: stream, consumer: consumer, sequence: sequence, completion))
    }

    /// Writes a subscription's row, or removes it, if no other write came first.
    public func write(_ write: SubscriptionWrite, completion: @escaping @Sendable (Result<SubscriptionWritten, StoreError>) -> Void) {
        writer.submit(.subscription(write, completion))
    }

    public func deleteConsumer(_ name: String, of stream: String, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        writer.submit(.deleteConsumer(stream: stream, name: name, completion))
    }

    /// The stream's durable consumers as last committed, by name; `nil` for no such stream.
    public func consumers(of stream: String) -> [ConsumerInfo]? {
        catalog[stream].map { $0.consumers.values.sorted { $0.name < $1.name } }
    }

    /// A consumer group's request (`GroupRequest`), decided by the writer in its batch and
    /// answered once committed. `deadLetter`: the group's dead-letter stream, if known.
    public func group(_ request: GroupRequest, of stream: String, deadLetter: String? = nil) {
        writer.submit(.group(stream: stream, deadLetter: deadLetter, request))
    }

    /// The stream's consumer groups as last committed, by name; `nil` for an unknown stream.
    public func groups(of stream: String) -> [String: ConsumerGroup]? {
        catalog[stream]?.groups
    }

    /// Creates a stream. Creating an existing stream with the same settings succeeds and
    /// changes nothing; with other settings it fails with `.streamExists`.
    public func create(_ stream: String, config: StreamConfig, completion: @escaping @Sendable (Result<StreamInfo, StoreError>) -> Void) {
        writer.submit(.create(stream: stream, config: config, completion))
    }

    /// Deletes a stream and its events.
    public func delete(_ stream: String, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        writer.submit(.delete(stream: stream, completion))
    }

    /// Stores the stream's terminal event; later appends are refused.
    public func terminate(_ stream: String, _ terminal: Terminal, completion: @escaping @Sendable (Result<StreamInfo, StoreError>) -> Void) {
        writer.submit(.terminate(stream: stream, terminal, completion))
    }

    /// Clears a terminal event so the stream can be appended to (and its source run) again,
    /// keeping or dropping its history. Sequence numbers continue either way.
    public func reset(_ stream: String, keepHistory: Bool, completion: @escaping @Sendable (Result<StreamInfo, StoreError>) -> Void) {
        writer.submit(.reset(stream: stream, keepHistory: keepHistory, completion))
    }

    /// Removes the stream's events `from...through` (those still retained), from inside its
    /// window as well as from its front: readers see a gap where they were, the stream's
    /// hash chain is still checked across it (`EventHole`), and the stream's count leaves
    /// them out. Answers the stream as the removal left it. Not public: what removes events
    /// from inside a stream is its expiry (`expireEvents`); tests remove exact ranges.
    func removeEvents(
        _ stream: String, from: UInt64, through: UInt64, completion: @escaping @Sendable (Result<StreamInfo, StoreError>) -> Void
    ) {
        writer.submit(.removeEvents(stream: stream, from: from, through: through, completion))
    }

    /// Removes events older than their stream's age limit. Appends trim their own stream;
    /// call this periodically so idle streams expire too.
    public func enforceRetention(completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        writer.submit(.enforceRetention(completion))
    }

    /// Completes once every write submitted before it has committed: read-your-writes for
    /// metadata (`info`, `streams`) after writes that were not awaited.
    public func barrier(completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        writer.submit(.barrier(completion))
    }

    // MARK: Derived streams

    /// Creates, confirms or rebuilds a derivation (see `DerivationDefinition`).
    public func define(_ definition: DerivationDefinition, completion: @escaping @Sendable (Result<Derivation, StoreError>) -> Void) {
        writer.submit(.defineDerivation(definition, completion))
    }

    /// Commits a derivation's step: its outputs, state and positions together, or nothing.
    public func commit(_ step: DerivationStep, completion: @escaping @Sendable (Result<Derivation, StoreError>) -> Void) {
        writer.submit(.derivationStep(step, completion))
    }

    public func define(_ definition: DerivationDefinition) async throws(StoreError) -> Derivation {
        try await bridge { self.define(definition, completion: $0) }
    }

    public func commit(_ step: DerivationStep) async throws(StoreError) -> Derivation {
        try await bridge { self.commit(step, completion: $0) }
    }

    /// Copies the whole store, consistently, to a new file at `path` (an absolute path to
    /// no file yet) while the writer goes on; answers each stream of the copy with its last
    /// sequence number. One at a time. Blocking, for as long as the copy takes: call it
    /// from a thread of its own.
    public func backup(to path: String) throws(StoreError) -> [(stream: String, lastSequence: UInt64)] {
        guard
            backingUp.withLock({ running in
                defer { running = true }
                return !running
            })
        else { throw .backupRefused("a backup is already running; one at a time") }
        defer { backingUp.withLock { $0 = false } }
        return try log.backup(to: path)
    }

    /// Every derivation as last committed. Blocking.
    public func derivations() throws(StoreError) -> [Derivation] {
        try log.derivations()
    }

    // MARK: Reads (blocking: call from a thread that may wait, never from an event loop)

    /// Up to `limit` retained events with `from <= sequence <= through`, oldest first.
    public func read(_ stream: String, from: UInt64, through: UInt64 = .max, limit: Int = 512) throws(StoreError) -> [StoredEvent] {
        var events: [StoredEvent] = []
        try forEachEvent(in: stream, from: from, through: through, limit: limit) { sequence, time, payload, trace, hash, key in
            events.append(StoredEvent(sequence: sequence, time: time, payload: payload, traceParent: trace, hash: hash, key: key))
        }
        return events
    }

    /// Visits up to `limit` retained events with `from <= sequence <= through`, oldest
    /// first, stopping after the event that reaches `byteBudget` payload bytes. Each event's
    /// time (ISO-8601 text), payload and trace context are handed over in SQLite's own buffers, valid only
    /// during the call: catch-up writes them into socket buffers without copying each event
    /// into a `StoredEvent` first.
    public func forEachEvent(
        in stream: String, from: UInt64, through: UInt64 = .max, limit: Int = 512, byteBudget: Int = .max,
        _ body: EventVisitor
    ) throws(StoreError) {
        guard let record = catalog[stream] else { throw .unknownStream(stream) }
        guard from <= through, limit > 0 else { return }
        let segments = LogSegments(of: record, from: from, through: through) { catalog[$0] }
        do {
            try log.forEachEvent(segments, limit: limit, byteBudget: byteBudget, includingExpired: false, body)
        } catch {
            CorruptionReports.note(error)
            throw error
        }
    }

    /// The newest retained event of `stream` whose key is `key`; `nil` if there is none.
    /// (A tombstone, an event of the key with an empty payload, is returned as it is: the
    /// caller says what it means.)
    public func latest(_ stream: String, key: EventKey) throws(StoreError) -> StoredEvent? {
        guard let record = catalog[stream] else { throw .unknownStream(stream) }
        guard record.info.lastSequence >= record.info.firstSequence else { return nil }
        let segments = LogSegments(of: record, from: record.info.firstSequence, through: record.info.lastSequence) { catalog[$0] }
        do {
            return try log.latestEvent(withKey: key, in: segments)
        } catch {
            CorruptionReports.note(error)
            throw error
        }
    }

    /// The sequence numbers of the current event of every key of `stream` up to `through`:
    /// each key's newest retained event, unless it is the key's tombstone; ascending.
    public func currentEvents(of stream: String, through: UInt64) throws(StoreError) -> [UInt64] {
        guard let record = catalog[stream] else { throw .unknownStream(stream) }
        let segments = LogSegments(of: record, from: record.info.firstSequence, through: min(through, record.info.lastSequence)) { catalog[$0] }
        return try log.currentEvents(in: segments, limit: .max)
    }

    /// How many keys of `stream` have a current value (a retained newest event that is
    /// not a tombstone), counted up to `limit`.
    public func keyCount(of stream: String, upTo limit: Int) throws(StoreError) -> Int {
        guard let record = catalog[stream] else { throw .unknownStream(stream) }
        let segments = LogSegments(of: record, from: record.info.firstSequence, through: record.info.lastSequence) { catalog[$0] }
        return min(try log.currentEvents(in: segments, limit: limit).count, limit)
    }

    /// Visits the events `sequences` of `stream` (ascending), in order, each checked against
    /// its chain; one no longer retained is passed over. Stops before the event that would
    /// start past `byteBudget` payload bytes (after one at least). Returns how many of
    /// `sequences` it has done, visited or passed over.
    public func forEachEvent(
        in stream: String, at sequences: some Collection<UInt64>, byteBudget: Int = .max, _ body: EventVisitor
    ) throws(StoreError) -> Int {
        guard let record = catalog[stream] else { throw .unknownStream(stream) }
        let reads = sequences.map { sequence in LogSegments(of: record, from: sequence, through: sequence) { catalog[$0] } }
        do {
            return try log.forEachEvent(eachOf: reads, byteBudget: byteBudget, body)
        } catch {
            CorruptionReports.note(error)
            throw error
        }
    }

    /// The last `count` retained events (fewer if fewer are retained), oldest first.
    public func readLast(_ stream: String, count: Int) throws(StoreError) -> [StoredEvent] {
        guard let info = info(stream) else { throw .unknownStream(stream) }
        guard count > 0, info.eventCount > 0 else { return [] }
        return try read(stream, from: info.firstSequence(ofLast: UInt64(count)), limit: count)
    }

    /// The sequence number of the first retained event stored at or after `time`
    /// (`lastSequence + 1` if none): where a subscription "since a time" starts.
    public func firstSequence(_ stream: String, since time: Date) throws(StoreError) -> UInt64 {
        guard let record = catalog[stream] else { throw .unknownStream(stream) }
        return try log.firstSequence(of: record, atOrAfter: Timestamp.millis(time))
    }

    /// Runs a read-only SQL query on a SQLite store's reader, for tests' diagnostics. Not
    /// public: GRDB's `Database` stays out of the store's API.
    func query<T: Sendable>(_ body: @Sendable (Database) throws -> T) throws -> T {
        guard let sqlite else { throw StoreError.invalidConfig("SQL diagnostics read SQLite stores only") }
        return try sqlite.read(body)
    }

    /// The same on the writer's connection, whose settings (`synchronous`) are what a
    /// commit's durability depends on.
    func queryWriter<T: Sendable>(_ body: @Sendable (Database) throws -> T) throws -> T {
        guard let sqlite else { throw StoreError.invalidConfig("SQL diagnostics read SQLite stores only") }
        return try sqlite.pool.writeWithoutTransaction(body)
    }

    // MARK: Sources (one runner per stream)

    /// Claims the right to run `stream`'s source in this process: always granted on SQLite
    /// (one daemon per file); on PostgreSQL held by one daemon of those sharing the
    /// database at a time, until `releaseSource` or that daemon's end (its session's
    /// advisory lock). Blocking: call from a thread that may wait.
    public func claimSource(_ stream: String) -> Bool { log.claimSource(stream) }

    public func releaseSource(_ stream: String) { log.releaseSource(stream) }

    /// Whether this daemon still holds the claim it made: false once a shared database's
    /// session that held it has dropped (another daemon may then claim the source).
    public func holdsSource(_ stream: String) -> Bool { log.holdsSource(stream) }

    /// Whether other daemons may share this store (PostgreSQL).
    public var isShared: Bool { log.isShared }

    // MARK: Closing

    /// Refuses new writes, commits what is queued (completing those writes), then releases
    /// the database (SQLite: checkpointed and unlocked for another process). Idempotent.
    public func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        writer.close()
        log.close()
    }
}

extension EventStore {
    public func append(_ payload: Data, to stream: String) async throws(StoreError) -> StoredEvent {
        try await bridge { append(payload, to: stream, completion: $0) }
    }

    public func create(_ stream: String, config: StreamConfig) async throws(StoreError) -> StreamInfo {
        try await bridge { create(stream, config: config, completion: $0) }
    }

    public func delete(_ stream: String) async throws(StoreError) {
        try await bridge { delete(stream, completion: $0) }
    }

    @discardableResult
    public func terminate(_ stream: String, _ terminal: Terminal) async throws(StoreError) -> StreamInfo {
        try await bridge { terminate(stream, terminal, completion: $0) }
    }

    @discardableResult
    public func reset(_ stream: String, keepHistory: Bool) async throws(StoreError) -> StreamInfo {
        try await bridge { reset(stream, keepHistory: keepHistory, completion: $0) }
    }

    public func write(_ write: StreamWrite) async throws(StoreError) -> StreamWriteOutcome {
        try await bridge { self.write(write, completion: $0) }
    }

    /// Every subscription's row as last committed, read from the database (by any daemon
    /// sharing it).
    public func subscriptions() throws(StoreError) -> [SubscriptionRow] {
        try log.subscriptions(id: nil)
    }

    /// One subscription's row as last committed, read from the database.
    public func subscription(_ id: String) throws(StoreError) -> SubscriptionRow? {
        try log.subscriptions(id: id).first
    }

    /// The signing key kept in the database, `candidate` if it held none.
    public func signingKey(candidate: SigningKey) async throws(StoreError) -> SigningKey {
        try await bridge { done in writer.submit(.signingKey(candidate: candidate, done)) }
    }

    public func barrier() async throws(StoreError) {
        try await bridge { barrier(completion: $0) }
    }

    /// The earliest time (ms since 1970) a stored event expires at; `nil` when none does.
    /// Blocking: a read of the expiry index.
    public func nextExpiry() throws(StoreError) -> Int64? {
        let next = try log.nextExpiry()
        if next != nil { catalog.noteExpiringEvents() }
        return next
    }

    /// Removes events whose time-to-live ran out (a batch's worth at most, see
    /// `WriterRules.expireEvents`): `true` if more are expired, to ask again at once.
    public func expireEvents() async throws(StoreError) -> Bool {
        try await bridge { done in writer.submit(.expireEvents(done)) }
    }

    func removeEvents(_ stream: String, from: UInt64, through: UInt64) async throws(StoreError) -> StreamInfo {
        try await bridge { removeEvents(stream, from: from, through: through, completion: $0) }
    }

    public func enforceRetention() async throws(StoreError) {
        try await bridge { enforceRetention(completion: $0) }
    }

    func bridge<T: Sendable>(
        _ start: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void
    ) async throws(StoreError) -> T {
        let result = await withCheckedContinuation { continuation in
            start { continuation.resume(returning: $0) }
        }
        return try result.get()
    }
}
