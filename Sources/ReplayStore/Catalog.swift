import Foundation
import GRDB
import ReplayModel
import ReplaySync
import Synchronization

/// The streams, in memory: one record per row of `streams`, loaded at open (O(streams))
/// and replaced by the writer after each commit. Readers take a snapshot; nobody waits on
/// SQLite to learn a stream's bounds.
final class Catalog: Sendable {
    struct Record: Sendable {
        let id: Int64
        var info: StreamInfo
        /// The time (ms) of the stream's newest event: the next commit's time is never
        /// earlier, so times rise with seq and can be binary-searched.
        var lastTime: Int64 = 0
        /// Its durable consumers, by name (few per stream: loaded with it).
        var consumers: [String: ConsumerInfo] = [:]
        /// Its consumer groups, by name, with their pending events (bounded by the members'
        /// limits: loaded with it).
        var groups: [String: ConsumerGroup] = [:]
        /// The time (ms) of its last write in this process, events or not (a close): a
        /// time-to-live counts from it.
        var lastWrite: Int64 = 0
        /// A derived stream: only its derivation appends to it.
        var derived = false
        /// The hash of its newest event (`HashChain`): the next event's link follows it.
        var chainHead: EventHash = .zero
        /// The hash before its first retained event: what a read from the start checks
        /// the first event against once retention removed the ones before it.
        var chainBase: EventHash = .zero
    }

    private let records: Locked<[String: Record]>
    /// When each stream with a time-to-live was last read (ms): reads do not go through the
    /// writer, and a read that reset the countdown need not be durable (after a restart the
    /// countdown starts again from the last write, which only keeps a stream longer).
    private let reads = Locked<[String: Int64]>([:])

    /// Whether the database may hold events that expire: set once this process stores one
    /// or sees one (`EventStore.nextExpiry`). From then on another daemon's new events are
    /// not kept in memory as they are read (the read does not carry their expiry): readers
    /// read them from the store, which leaves out the expired ones.
    /// An atomic: the writer notes it for every expiring event it appends.
    private let expiringSeen = Atomic<Bool>(false)
    var mayHoldExpiringEvents: Bool { expiringSeen.load(ordering: .relaxed) }
    func noteExpiringEvents() {
        if !expiringSeen.load(ordering: .relaxed) { expiringSeen.store(true, ordering: .relaxed) }
    }

    init(_ records: [Record]) {
        self.records = Locked(Dictionary(records.map { ($0.info.name, $0) }, uniquingKeysWith: { $1 }))
    }

    /// Reads a SQLite database's streams and consumers.
    convenience init(loadingFrom db: Database) throws {
        var records: [String: Record] = [:]
        var names: [Int64: String] = [:]
        var forks: [(name: String, sourceID: Int64)] = []
        for row in try Row.fetchAll(db, sql: "SELECT * FROM streams") {
            let record = try StreamRow(row: row).record()
            records[record.info.name] = record
            names[record.id] = record.info.name
            if let source: Int64 = row["fork_of"] { forks.append((record.info.name, source)) }
        }
        // A fork names its source; the source's row comes in any order, so names go second.
        for (name, sourceID) in forks {
            records[name]?.info.fork?.source = names[sourceID] ?? ""
        }
        for row in try Row.fetchAll(db, sql: "SELECT * FROM consumers") {
            guard let stream = names[row["stream_id"]] else { continue }
            let consumer = ConsumerInfo(
                name: row["name"], ackedSequence: UInt64(row["acked_seq"] as Int64),
                createdAt: Timestamp.date(millis: row["created_at"]), updatedAt: Timestamp.date(millis: row["updated_at"]))
            records[stream]?.consumers[consumer.name] = consumer
        }
        for id in try Int64.fetchAll(db, sql: "SELECT stream_id FROM derivations") {
            guard let stream = names[id] else { continue }
            records[stream]?.derived = true
        }
        for row in try Row.fetchAll(db, sql: "SELECT * FROM groups") {
            guard let stream = names[row["stream_id"]] else { continue }
            let group = try GroupRow.group(row)
            records[stream]?.groups[group.name] = group
        }
        for row in try Row.fetchAll(db, sql: "SELECT * FROM group_pending") {
            guard let stream = names[row["stream_id"]] else { continue }
            records[stream]?.groups[row["name"]]?.pending[UInt64(row["seq"] as Int64)] = GroupRow.pending(row)
        }
        self.init(Array(records.values))
    }

    subscript(name: String) -> Record? {
        records.withLock { $0[name] }
    }

    /// The records of `names`, as one commit left them all (one look under the lock).
    func records(_ names: [String]) -> [Record?] {
        records.withLock { records in names.map { records[$0] } }
    }

    var all: [Record] {
        records.withLock { Array($0.values) }.sorted { $0.info.name < $1.info.name }
    }

    /// Notes a read of a stream, for its time-to-live.
    func noteRead(_ name: String, at millis: Int64) {
        reads.withLock { $0[name] = millis }
    }

    /// When the stream expires (ms), if it does: a fixed time, or its time-to-live after
    /// the latest of its creation, its last write and its last read.
    func deadline(of record: Record) -> Int64? {
        switch record.info.config.expiry {
        case .at(let date): return Timestamp.millis(date)
        case .idle(let seconds):
            let read = reads.withLock { $0[record.info.name] } ?? 0
            return max(Timestamp.millis(record.info.createdAt), record.lastTime, read, record.lastWrite) + Int64(seconds) * 1000
        case nil: return nil
        }
    }

    /// Applies what a committed transaction changed: `nil` means deleted.
    func apply(_ changes: [String: Record?]) {
        records.withLock { records in
            for (name, record) in changes { records[name] = record }
        }
        reads.withLock { reads in
            for (name, record) in changes {
                if case .none = record { reads[name] = nil }
            }
        }
    }
}

/// A row of `streams` as both databases store it, column for column: each database reads
/// its row into this, and this alone turns it into a record.
struct StreamRow {
    var id: Int64
    var name: String
    var capacity: Int?
    var maxBytes: Int?
    var maxAge: Double?
    var createdAt: String
    var firstSequence: Int64
    var lastSequence: Int64
    var byteCount: Int
    var terminal: String?
    var terminalMessage: String?
    var terminalAt: String?
    var lastTime: Int64
    var sourceCommand: String?
    var sourceConnect: String?
    var sourceOptions: String?
    var contentType: String?
    var ttlSeconds: Int?
    var expiresAt: Int64?
    var writerSequence: String?
    var forkSequence: Int64?
    var forkOffset: Int64?
    var forkSubOffset: Int64?
    var deletedAt: String?
    var keepUnacked: Int?
    var eventTTL: Double?
    /// The source's name, where the database joins it in (else filled in by the catalog).
    var forkSource: String?
    /// `chain_head`, `chain_base`: 32 bytes, or NULL for none yet (`EventHash.zero`).
    var chainHead: EventHash = .zero
    var chainBase: EventHash = .zero
    /// `scheduled_count`, `next_due`.
    var scheduledCount = 0
    var nextDue: Int64?
    /// `removed_events`, `removed_through`.
    var removedEvents = 0
    var removedThrough: Int64 = 0
    /// `compact`, `tombstone_retention_seconds`, `compacted_at`, `compacted_events`.
    var compact = false
    var tombstoneRetention: Double?
    var compactedAt: Int64?
    var compactedEvents = 0

    /// The row as the catalog keeps it; a source's options that are not valid (a row
    /// written by hand) are an error that names the stream, not a silent default.
    func record() throws(StoreError) -> Catalog.Record {
        var source: StreamSource?
        if let command = sourceCommand, let connect = StreamSource.ConnectMode(rawValue: sourceConnect ?? "") {
            var options = SourceOptions()
            if let sourceOptions {
                do { options = try SourceOptions(json: sourceOptions) } catch {
                    throw .invalidConfig("stream '\(name)' has source options the store cannot read: \(error.message)")
                }
            }
            source = StreamSource(command: command, connect: connect, options: options)
        }
        var expiry: StreamExpiry?
        if let ttlSeconds {
            expiry = .idle(seconds: ttlSeconds)
        } else if let expiresAt {
            expiry = .at(Timestamp.date(millis: expiresAt))
        }
        let config = StreamConfig(
            capacity: capacity, maxBytes: maxBytes, maxAge: maxAge, source: source, contentType: contentType, expiry: expiry,
            keepUnacked: keepUnacked, eventTTL: eventTTL,
            compaction: compact ? KeyCompaction(tombstoneRetention: tombstoneRetention ?? KeyCompaction.defaultTombstoneRetention) : nil)
        return Catalog.Record(
            id: id,
            info: StreamInfo(
                name: name, config: config,
                createdAt: Timestamp.parse(createdAt) ?? .distantPast,
                firstSequence: UInt64(firstSequence), lastSequence: UInt64(lastSequence),
                byteCount: byteCount, terminal: Terminal(kind: terminal, message: terminalMessage),
                terminalAt: terminalAt.flatMap(Timestamp.parse),
                writerSequence: writerSequence,
                fork: forkSequence.map {
                    StreamFork(
                        source: forkSource ?? "", sequence: UInt64($0), requestedSequence: UInt64(forkOffset ?? $0),
                        requestedSubOffset: UInt64(forkSubOffset ?? 0))
                },
                deletedAt: deletedAt.flatMap(Timestamp.parse), scheduledCount: scheduledCount, nextDue: nextDue,
                removedEvents: removedEvents, removedThrough: UInt64(removedThrough), compactedAt: compactedAt,
                compactedEvents: compactedEvents),
            lastTime: lastTime, chainHead: chainHead, chainBase: chainBase)
    }
}

extension StreamRow {
    init(row: Row) {
        self.init(
            id: row["id"], name: row["name"], capacity: row["capacity"], maxBytes: row["max_bytes"], maxAge: row["max_age_seconds"],
            createdAt: row["created_at"], firstSequence: row["first_seq"], lastSequence: row["last_seq"], byteCount: row["byte_count"],
            terminal: row["terminal"], terminalMessage: row["terminal_message"], terminalAt: row["terminal_at"], lastTime: row["last_time"],
            sourceCommand: row["source_command"], sourceConnect: row["source_connect"], sourceOptions: row["source_options"],
            contentType: row["content_type"], ttlSeconds: row["ttl_seconds"], expiresAt: row["expires_at"],
            writerSequence: row["writer_seq"], forkSequence: row["fork_seq"], forkOffset: row["fork_offset"],
            forkSubOffset: row["fork_sub_offset"], deletedAt: row["deleted_at"], keepUnacked: row["keep_unacked"], eventTTL: row["event_ttl_seconds"],
            forkSource: row["fork_source"], chainHead: Self.hash(row["chain_head"]), chainBase: Self.hash(row["chain_base"]),
            scheduledCount: row["scheduled_count"], nextDue: row["next_due"], removedEvents: row["removed_events"],
            removedThrough: row["removed_through"], compact: row["compact"], tombstoneRetention: row["tombstone_retention_seconds"],
            compactedAt: row["compacted_at"], compactedEvents: row["compacted_events"])
    }

    /// A hash column's value; NULL (or anything not 32 bytes) is none.
    static func hash(_ bytes: Data?) -> EventHash {
        bytes.flatMap { bytes in bytes.withUnsafeBytes { EventHash(bytes: $0) } } ?? .zero
    }
}
