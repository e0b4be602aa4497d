import GRDB
import ReplayCore
import ReplayModel

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
        /// The time (ms) of its last write in this process, events or not (a close): a
        /// time-to-live counts from it.
        var lastWrite: Int64 = 0
    }

    private let records: Locked<[String: Record]>
    /// When each stream with a time-to-live was last read (ms): reads do not go through the
    /// writer, and a read that reset the countdown need not be durable (after a restart the
    /// countdown starts again from the last write, which only keeps a stream longer).
    private let reads = Locked<[String: Int64]>([:])

    init(loadingFrom db: Database) throws {
        var records: [String: Record] = [:]
        var names: [Int64: String] = [:]
        var forks: [(name: String, sourceID: Int64)] = []
        for row in try Row.fetchAll(db, sql: "SELECT * FROM streams") {
            let record = try Record(row: row)
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
        self.records = Locked(records)
    }

    subscript(name: String) -> Record? {
        records.withLock { $0[name] }
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

extension Catalog.Record {
    init(row: Row) throws {
        let terminal = Terminal(kind: row["terminal"], message: row["terminal_message"])
        var source: StreamSource?
        if let command: String = row["source_command"],
            let connect = StreamSource.ConnectMode(rawValue: row["source_connect"] ?? "")
        {
            source = StreamSource(command: command, connect: connect, options: row["source_options"])
        }
        var expiry: StreamExpiry?
        if let seconds: Int = row["ttl_seconds"] {
            expiry = .idle(seconds: seconds)
        } else if let millis: Int64 = row["expires_at"] {
            expiry = .at(Timestamp.date(millis: millis))
        }
        let config = StreamConfig(
            capacity: row["capacity"], maxBytes: row["max_bytes"], maxAge: row["max_age_seconds"],
            source: source, contentType: row["content_type"], expiry: expiry)
        let first: Int64 = row["first_seq"]
        let last: Int64 = row["last_seq"]
        self.init(
            id: row["id"],
            info: StreamInfo(
                name: row["name"], config: config,
                createdAt: Timestamp.parse(row["created_at"]) ?? .distantPast,
                firstSequence: UInt64(first), lastSequence: UInt64(last),
                byteCount: row["byte_count"], terminal: terminal,
                terminalAt: (row["terminal_at"] as String?).flatMap(Timestamp.parse),
                writerSequence: row["writer_seq"],
                fork: (row["fork_seq"] as Int64?).map {
                    StreamFork(
                        source: "", sequence: UInt64($0), requestedSequence: UInt64(row["fork_offset"] as Int64? ?? $0),
                        requestedSubOffset: UInt64(row["fork_sub_offset"] as Int64? ?? 0))
                },
                deletedAt: (row["deleted_at"] as String?).flatMap(Timestamp.parse)),
            lastTime: row["last_time"])
    }
}
