import ReplayModel

/// What can go wrong in the store. Each message says what happened and what to do.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file exists but is not a SQLite database.
    case notADatabase(path: String)
    /// The database (or its folder, where SQLite keeps its -wal and -shm files) cannot be written.
    case readOnly(path: String)
    /// Another process holds the database open for writing.
    case locked(path: String, holder: String)
    /// The database was made by a newer version of replay.
    case newerSchema(path: String, unknownMigrations: [String])
    /// The stream does not exist.
    case unknownStream(String)
    /// A stream of that name already exists with other settings.
    case streamExists(String)
    /// The name is not a valid stream name.
    case invalidStreamName(String)
    /// The settings are not valid.
    case invalidConfig(String)
    /// The stream has completed or failed: nothing can be appended after its terminal event.
    case terminated(stream: String)
    /// The disk (or the file-system quota) is full; nothing of the failed write was stored.
    case storageFull
    /// A limit of the store's layout was reached (stream ids, sequence numbers).
    case limitReached(String)
    /// A creator's cap on the streams it may have (a scoped token's): nothing was made.
    case quotaExceeded(String)
    /// A backup that cannot be taken as asked (its path, the store's kind, one running).
    case backupRefused(String)
    /// An expected last sequence number did not hold: nothing was stored.
    case wrongLastSequence(stream: String, last: UInt64, expected: UInt64)
    /// A producer's epoch is lower than the one the stream knows: an older instance, fenced.
    case staleEpoch(stream: String, producer: String, epoch: UInt64, current: UInt64)
    /// A producer skipped producer sequence numbers (or started a new epoch above 0).
    case producerSequenceGap(stream: String, producer: String, expected: UInt64, received: UInt64)
    /// A writer's own sequence label that does not sort after the stream's last one:
    /// nothing was stored.
    case writerSequenceRegression(stream: String, last: String, received: String)
    /// A fork of a stream that was deleted (it is kept only for its existing forks).
    case forkOfDeletedStream(String)
    /// A fork point the source does not have (beyond its tail, or a sub-offset past the
    /// next event).
    case invalidFork(String)
    /// A retry of a publish committed so long ago that its sequence number is forgotten.
    case forgottenDuplicate(stream: String, producer: String, pseq: UInt64)
    /// The stream has no durable consumer of that name.
    case unknownConsumer(stream: String, name: String)
    /// An acknowledgement that would move a consumer backwards or past the stream's end,
    /// or of an event its group member does not hold.
    case invalidAck(String)
    /// The stream has no consumer group of that name.
    case unknownGroup(stream: String, name: String)
    /// The stream has no pending scheduled event of that id.
    case unknownScheduled(stream: String, id: Int64)
    /// A SUB that joins a group asked for a setting other than the group's.
    case groupConflict(stream: String, group: String, setting: String, current: String, asked: String)
    /// A derivation's definition or step that does not match the stored one: redefined
    /// without `--rebuild`, or a step read from positions that another runner has moved.
    case derivationConflict(stream: String, reason: String)
    /// A stored event whose hash is not its chain's link from the event before it: the
    /// event (or one before it) was changed after it was written. It is never served.
    case corruptEvent(stream: String, sequence: UInt64, expected: String, found: String)
    /// The store was closed.
    case closed
    /// SQLite reported an error.
    case sqlite(code: Int32, message: String)
    /// The database server cannot be reached or failed the transaction (PostgreSQL):
    /// nothing of the failed request was committed, and it may be retried.
    case unavailable(String)

    public var description: String {
        switch self {
        case .notADatabase(let path):
            "\(path) is not a replay database (not a SQLite file); use a new or existing replay database"
        case .readOnly(let path):
            "\(path) is read-only: replay needs to write the file and create \(path)-wal and \(path)-shm beside it; fix the permissions or use another database"
        case .locked(let path, let holder):
            "\(path) is in use by another replay process (\(holder)); stop it or use another database"
        case .newerSchema(let path, let unknown):
            "\(path) was written by a newer version of replay (unknown migrations: \(unknown.joined(separator: ", "))); upgrade replay to open it"
        case .unknownStream(let name):
            "no stream named '\(name)'; create it first"
        case .streamExists(let name):
            "a stream named '\(name)' already exists with other settings; delete it first or use its settings"
        case .invalidStreamName(let name):
            "'\(name)' is not a valid stream name (\(StreamName.problem(with: name) ?? "unknown reason")): \(StreamName.rule)"
        case .invalidConfig(let reason):
            "invalid stream settings: \(reason)"
        case .terminated(let stream):
            "stream '\(stream)' has terminated (completed or failed); nothing can be appended after its terminal event"
        case .storageFull:
            "storage full: the database's disk has no room left; nothing was stored; free space and retry"
        case .quotaExceeded(let reason):
            reason
        case .backupRefused(let reason):
            "no backup: \(reason)"
        case .limitReached(let reason):
            "limit reached: \(reason)"
        case .wrongLastSequence(let stream, let last, let expected):
            "stream '\(stream)' is at last_seq=\(last), not the expected \(expected); nothing was stored: read from \(last + 1) and retry"
        case .staleEpoch(let stream, let producer, let epoch, let current):
            "producer '\(producer)' of stream '\(stream)' is at epoch=\(current); epoch \(epoch) is fenced and nothing was stored (a newer instance took over)"
        case .producerSequenceGap(let stream, let producer, let expected, let received):
            "producer '\(producer)' of stream '\(stream)' expects pseq=\(expected), got pseq=\(received); nothing was stored: resend from pseq \(expected)"
        case .writerSequenceRegression(let stream, let last, let received):
            "writer sequence '\(received)' does not sort after the last one of stream '\(stream)', '\(last)'; nothing was stored"
        case .forkOfDeletedStream(let name):
            "stream '\(name)' was deleted (it is kept only while its forks read from it): it cannot be forked"
        case .invalidFork(let reason):
            "invalid fork: \(reason)"
        case .forgottenDuplicate(let stream, let producer, let pseq):
            "pseq \(pseq) of producer '\(producer)' was already stored in stream '\(stream)', too long ago for its sequence number to be remembered; nothing was stored again"
        case .unknownConsumer(let stream, let name):
            "stream '\(stream)' has no durable consumer named '\(name)'"
        case .invalidAck(let reason):
            "invalid acknowledgement: \(reason); nothing changed"
        case .unknownGroup(let stream, let name):
            "stream '\(stream)' has no consumer group named '\(name)'"
        case .unknownScheduled(let stream, let id):
            "stream '\(stream)' has no pending scheduled event \(id) (it was appended, or cancelled)"
        case .groupConflict(let stream, let group, let setting, let current, let asked):
            "group '\(group)' of stream '\(stream)' has \(setting)=\(current), not \(asked); join it with its settings or use another group"
        case .derivationConflict(let stream, let reason):
            "derived stream '\(stream)': \(reason)"
        case .corruptEvent(let stream, let sequence, let expected, let found):
            "stream=\(stream) seq=\(sequence): its stored hash \(found) is not its chain's \(expected); it was changed after it was written and is not served (replayctl verify names every broken chain)"
        case .closed:
            "the store is closed"
        case .sqlite(let code, let message):
            "SQLite error \(code): \(message)"
        case .unavailable(let reason):
            "storage unavailable: \(reason)"
        }
    }
}

extension StoreError {
    /// Throws `.invalidStreamName` unless `name` keeps the stream-name rule.
    static func validateStreamName(_ name: String) throws(StoreError) {
        if !StreamName.isValid(name) { throw .invalidStreamName(name) }
    }
}
