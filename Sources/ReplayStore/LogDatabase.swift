import Foundation
import ReplayModel

/// A database the store keeps its streams in: the embedded SQLite file (`SQLiteLog`) or a
/// PostgreSQL server shared by several daemons (`PostgresLog`). `EventStore` is the same
/// code over both: the catalog, the one writer's queue, the listeners; each database
/// brings its transaction (`LogTransaction`, where the writer's rules meet its SQL) and
/// its reads.
protocol LogDatabase: Sendable {
    /// The streams as last committed.
    var catalog: Catalog { get }

    /// Runs one batch in one transaction, then completes its requests: always on the
    /// writer's own thread, never concurrently.
    func commit(_ batch: [WriteRequest])

    /// The writer found nothing more to commit: on its thread, before any later `commit`.
    func writerIdle()

    /// Visits up to `limit` committed events of `segments`, oldest first, stopping after the
    /// event that reaches `byteBudget` payload bytes; the buffers are valid only during the call.
    /// An expired event is left out, as a hole is (the read ends before it), unless
    /// `includingExpired` (`verify`, which checks what is stored, not what is served).
    func forEachEvent(
        _ segments: LogSegments, limit: Int, byteBudget: Int, includingExpired: Bool,
        _ body: EventVisitor
    ) throws(StoreError)

    /// The newest event of `segments` whose key is `key`, checked against its chain as
    /// every read's events are; `nil` if none is retained. One index lookup per segment,
    /// newest segment first.
    func latestEvent(withKey key: EventKey, in segments: LogSegments) throws(StoreError) -> StoredEvent?

    /// The sequence numbers of the current event of every key in `segments` (each key's
    /// newest; a key whose newest is a tombstone, an empty payload, has none), ascending,
    /// as one read sees them (`CurrentEvents`); of the first `limit` keys of each segment
    /// (in the keys' order), for a count that must stay quick.
    func currentEvents(in segments: LogSegments, limit: Int) throws(StoreError) -> [UInt64]

    /// Visits the events of each of `reads` in turn (each whole), checked as every read's
    /// are, in one read transaction where the database has them; stops before the read
    /// that would start past `byteBudget` payload bytes. Returns how many reads it did.
    func forEachEvent(eachOf reads: [LogSegments], byteBudget: Int, _ body: EventVisitor) throws(StoreError) -> Int

    /// The first sequence number of the stream's retained events stored at or after `millis`.
    func firstSequence(of record: Catalog.Record, atOrAfter millis: Int64) throws(StoreError) -> UInt64
    /// Up to `limit` of the stream's events `from...through` as last committed, oldest
    /// first, as compaction judges them: sequence number, its key's newest event, payload
    /// size and commit time, expired or not.
    func compactionRows(of stream: Int64, from: UInt64, through: UInt64, limit: Int) throws(StoreError) -> [CompactionRow]
    /// The earliest expiry of any stored event (ms), as last committed; `nil`: none expires.
    func nextExpiry() throws(StoreError) -> Int64?
    /// The stream's hole that holds `sequence`, as last committed (`EventHole`).
    func hole(of stream: Int64, containing sequence: UInt64) throws(StoreError) -> EventHole?

    /// Every subscription's row as last committed (`id`: that one only).
    func subscriptions(id: String?) throws(StoreError) -> [SubscriptionRow]

    /// The stream's pending scheduled events, earliest due first, up to `limit`.
    func scheduledEvents(of stream: Int64, name: String, limit: Int) throws(StoreError) -> [ScheduledEvent]
    /// The last tick a scheduled source of the stream was run for (ms), if any.
    func lastSourceTick(of stream: Int64) throws(StoreError) -> Int64?

    /// Every derivation as last committed, by derived stream.
    func derivations() throws(StoreError) -> [Derivation]

    /// Copies the whole database, consistently, to a new file at `path`, beside the writer;
    /// answers each stream of the copy with its last sequence number. Blocking, for as
    /// long as the copy takes.
    func backup(to path: String) throws(StoreError) -> [(stream: String, lastSequence: UInt64)]

    /// Claims the right to run `stream`'s source: whether this daemon now holds it. Blocking.
    func claimSource(_ stream: String) -> Bool
    /// Gives a claimed source up (it stopped here).
    func releaseSource(_ stream: String)
    /// Whether a claim made here still holds (a shared database's session may have dropped).
    func holdsSource(_ stream: String) -> Bool
    /// Whether other daemons may share this database (and its sources).
    var isShared: Bool { get }

    /// Once the store's writer exists: a shared database starts following the other
    /// daemons' commits (they become `refresh` requests of this writer).
    func start(writer: WriteQueue)

    /// After the writer has drained: release the database. Called once (`EventStore.close`).
    func close()
}

/// What a read hands each event: its sequence number, its time (ISO-8601 text), its
/// payload, its publisher's trace context (`nil`: untraced), its hash-chain link
/// (`nil`: stored before chaining began, `HashChain`) and its key (`nil`: none), in the
/// store's own buffers, valid only during the call.
public typealias EventVisitor = (
    _ sequence: UInt64, _ time: UnsafeRawBufferPointer, _ payload: UnsafeRawBufferPointer, _ traceParent: UnsafeRawBufferPointer?,
    _ hash: UnsafeRawBufferPointer?, _ key: UnsafeRawBufferPointer?
) -> Void
