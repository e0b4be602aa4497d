import Foundation
import ReplayModel

/// What the writer's rules (`WriterRules`: numbering, checks, retention, forks, producers,
/// consumers) ask of the database they write, inside one open transaction: the one seam
/// between those rules and a database's SQL. `SQLiteTransaction` and `PostgresTransaction`
/// are its two sides; everything above the store is the same code over both.
///
/// A class: the rules hold one per batch and pass it down, and a database side keeps state
/// across calls (a statement cache, buffered inserts).
protocol LogTransaction: AnyObject {
    /// Whether `prepare(streams:)` must see the batch's stream names before its requests
    /// run. Only a database shared by several writers does; for the others the writer does
    /// not gather the names at all (an array and a set insert per request: a sixth of the CPU
    /// samples in replayd's own code when pipelined SQLite publishing was profiled).
    static var locksStreamsUpFront: Bool { get }

    /// Called once before the batch's requests with every stream name they name: a database
    /// shared by several writers locks those rows here, in one order for every writer, so
    /// that two batches never wait on each other in a cycle.
    func prepare(streams: Set<String>) throws

    /// The stream's record as this transaction may change it: the catalog's copy where this
    /// process is the only writer, the row read and locked until commit where it is not.
    func record(_ name: String, cached: Catalog.Record?) throws -> Catalog.Record?
    /// The stream as last committed, read without locking it: for `refresh`, which only
    /// learns what another daemon did (locking there would wait on, and could deadlock
    /// with, that daemon's next batch).
    func committedRecord(_ name: String) throws -> Catalog.Record?

    /// A new stream row; its id.
    func insertStream(_ name: String, _ config: StreamConfig, createdAt: String, fork: (StreamFork, sourceID: Int64)?) throws -> Int64
    /// Records who created the stream (a token's subject), for the cap on how many one may.
    func recordCreator(_ creator: String, of stream: Int64) throws
    /// How many streams `creator` created that still exist (soft-deleted ones excepted).
    func streamsCreated(by creator: String) throws -> Int
    /// Whether a new stream still gets an id its events can be stored under.
    func roomForAStream() throws -> StoreError?
    func updateStream(_ record: Catalog.Record) throws
    /// Whether every batch that touches a stream writes its row, changed or not: a database
    /// shared by several writers versions the row with each write, which is how a batch of
    /// another daemon on the same stream (its groups included) is noticed. Where this
    /// process is the only writer, a row left as it was is not written again.
    static var writesEveryTouchedRow: Bool { get }
    /// Removes the stream's row (its producers and consumers go with it).
    func deleteStream(_ id: Int64) throws

    /// `stamp`: the producer's, on the first event of each publish it makes (SQLite keeps
    /// it in the event's row, so that the producer's own row can be written behind).
    /// `origin`: a derivation's output's input event (`stream:seq`). `trace`: the
    /// publisher's trace context. `expiresAt`: when it expires (ms), if it does. `hash`:
    /// its link in the stream's chain (`HashChain`).
    func insertEvent(
        stream: Int64, sequence: UInt64, millis: Int64, payload: Data, stamp: ProducerStamp?, origin: String?, trace: TraceParent?,
        key: EventKey?, expiresAt: Int64?, hash: EventHash
    ) throws
    /// The stored hash of one of the stream's own events; `nil` if there is no such row
    /// (or it was stored before chaining began).
    func eventHash(stream: Int64, sequence: UInt64) throws -> EventHash?
    /// Every event of the stream.
    func deleteEvents(of stream: Int64) throws
    /// Events `from...through`; the payload bytes freed.
    func deleteEvents(of stream: Int64, from: UInt64, through: UInt64) throws -> Int
    /// Events `from...through` removed from inside the window (`from` after its first
    /// event): their rows, and the hole they leave, merged with the holes inside the
    /// range or beside it (`EventHole`). What went: events (rows that were there) and
    /// payload bytes. A key whose newest event went falls back to its newest before the
    /// range, if it has one.
    func removeEvents(of stream: Int64, from: UInt64, through: UInt64) throws -> (events: Int, bytes: Int)
    /// Up to `limit` events expired by `millis`, earliest expiry first (of `streams` only,
    /// when given: the ones locked up front).
    func expiredEvents(by millis: Int64, limit: Int, streams: [String]?) throws -> [(stream: String, sequence: UInt64)]
    /// The streams of (up to `limit` of) the events expired by `millis`, for a database
    /// shared by several writers to lock up front.
    func streamsWithExpiredEvents(by millis: Int64, limit: Int) throws -> [String]
    /// The stream's hole that holds `sequence`, if one does.
    func hole(of stream: Int64, containing sequence: UInt64) throws -> EventHole?
    /// Forgets the holes that end at or before `through` (retention has passed them); the
    /// events they held.
    func dropHoles(of stream: Int64, through: UInt64) throws -> Int
    /// The payload sizes of the stream's events from `from` on, oldest first, until `body`
    /// returns false.
    func walkPayloadSizes(of stream: Int64, from: UInt64, _ body: (_ sequence: UInt64, _ size: Int) -> Bool) throws
    /// The first sequence number in `window` stored at or after `millis` (`upperBound + 1`: none).
    func firstSequence(of stream: Int64, in window: ClosedRange<UInt64>, atOrAfter millis: Int64) throws -> UInt64
    /// Reads as this transaction sees them (a fork's first event is cut from its source's),
    /// leaving out the events expired by `expiredBy` (ms), as a hole.
    func forEachEvent(
        _ segments: LogSegments, limit: Int, byteBudget: Int, expiredBy: Int64,
        _ body: EventVisitor
    ) throws

    /// Whether reading events inside the transaction costs no more than a read elsewhere
    /// (SQLite: the same process, the pages just written), so a hand-out's events are read
    /// by the writer for its member; PostgreSQL's would be a round trip in the writer's batch.
    static var readsInPlace: Bool { get }

    func writeConsumer(stream: Int64, _ consumer: ConsumerInfo) throws
    func deleteConsumer(stream: Int64, name: String) throws

    /// A consumer group as this transaction leaves it: its row, and what changed of its
    /// pending events since `before` (as the transaction found them).
    func writeGroup(stream: Int64, _ group: ConsumerGroup, before: [UInt64: PendingDelivery]) throws
    /// Removes the group and its pending events.
    func deleteGroup(stream: Int64, name: String) throws
    func insertDeadLetter(_ letter: DeadLetter) throws

    /// A producer's committed state (read once per transaction by the rules).
    func producerState(_ key: ProducerKey) throws -> ProducerState?
    /// A producer's accepted publish that stored no event to stamp (a close, a stream of
    /// capacity 0).
    func publishedWithoutEvent(_ key: ProducerKey)
    /// The producers' states the transaction changed (SQLite may leave some for later:
    /// `ProducerTable`); `millis` is the batch's time.
    func writeProducers(_ changes: [ProducerKey: ProducerState], millis: Int64) throws
    /// Forgets producers idle since before `millis`.
    func expireProducers(before millis: Int64) throws

    /// A subscription's row written or removed if its revision is still the one expected.
    func writeSubscription(_ write: SubscriptionWrite, millis: Int64) throws -> SubscriptionWritten
    /// The signing key kept, `candidate` if there was none.
    func signingKey(orInsert candidate: SigningKey, createdAt: Int64) throws -> SigningKey

    /// The derived stream's derivation as committed (locked with its stream's row where
    /// the database is shared); `nil` if it is a plain stream.
    func derivation(stream: Int64, name: String) throws -> Derivation?
    /// Writes (inserts or replaces) the derived stream's derivation.
    func writeDerivation(stream: Int64, _ derivation: Derivation) throws

    /// A scheduled event stored (`ScheduleRequest`); its id.
    func insertScheduled(stream: Int64, _ request: ScheduleRequest, createdAt: Int64) throws -> Int64
    /// Removes the stream's pending scheduled event `id`; whether there was one.
    func deleteScheduled(stream: Int64, id: Int64) throws -> Bool
    /// The streams of (up to `limit` of) the events due by `millis`, for a database shared
    /// by several writers to lock up front; empty where nothing is locked.
    func streamsWithDueEvents(by millis: Int64, limit: Int) throws -> [String]
    /// Takes up to `limit` events due by `millis` out of the table, earliest first (of
    /// `streams` only, when given: the ones locked up front); another writer's taken
    /// rows are passed over.
    func takeDueEvents(by millis: Int64, limit: Int, streams: [String]?) throws -> [ScheduledEvent]
    /// The earliest due time of any pending scheduled event, or of the stream's.
    func nextScheduledDue() throws -> Int64?
    func nextScheduledDue(of stream: Int64) throws -> Int64?

    /// Moves a scheduled source's last tick to `tick` if it was before it (or none);
    /// whether it moved.
    func advanceSourceTick(stream: Int64, to tick: Int64) throws -> Bool

    /// An atomic send's undo point inside the batch.
    func savepoint() throws
    func rollbackToSavepoint() throws
    func releaseSavepoint() throws
}

/// A producer of one stream.
struct ProducerKey: Hashable, Sendable {
    let stream: Int64
    let producer: String
}
