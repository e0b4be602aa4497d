import Foundation
import GRDB

/// Runs one batch of write requests in one transaction: assigns sequence numbers, inserts
/// with cached statements, trims each touched stream to its retention, updates the stream
/// rows, commits, and only then updates the catalog, tells listeners and completes the
/// requests. Sequence numbers are assigned here, inside the transaction, so a failed
/// transaction (a full disk) leaves no hole: the catalog is untouched and the next batch
/// reuses the same numbers.
struct BatchCommitter: Sendable {
    let pool: DatabasePool
    let catalog: Catalog
    let listeners: CommitListeners
    let now: @Sendable () -> Date

    func commit(_ batch: [WriteRequest]) {
        var transaction = Transaction(catalog: catalog, time: now())
        do {
            try pool.writeWithoutTransaction { db in
                try db.inTransaction(.immediate) {
                    transaction.reset()
                    for request in batch { try transaction.perform(request, db) }
                    try transaction.finish(db)
                    return .commit
                }
            }
        } catch {
            let failure = StoreError(error)
            for request in batch { request.fail(failure) }
            return
        }
        catalog.apply(transaction.changedRecords)
        listeners.notify(transaction.commitBatch)
        for completion in transaction.completions { completion() }
    }
}

/// The state of one transaction: working copies of the streams it touches, what it
/// appended, and the completions to run once it has committed.
private struct Transaction {
    let catalog: Catalog
    let time: Date
    let timeText: String
    /// Working copies of the streams this transaction changed, mutated in place (copying a
    /// record out and back for every append was the writer's main cost).
    var touched: [String: Catalog.Record] = [:]
    /// Streams this transaction deleted (and did not create again).
    var deleted: Set<String> = []
    var appended: [String: [StoredEvent]] = [:]
    var completions: [@Sendable () -> Void] = []

    init(catalog: Catalog, time: Date) {
        self.catalog = catalog
        // One commit time for the whole batch: cheap, and times never go backwards in it.
        self.time = Date(timeIntervalSince1970: (time.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
        self.timeText = Timestamp.format(time)
    }

    /// Forgets a previous attempt (GRDB may retry the block only on our own error paths,
    /// but a clean slate makes that harmless).
    mutating func reset() {
        touched = [:]
        deleted = []
        appended = [:]
        completions = []
    }

    func record(_ name: String) -> Catalog.Record? {
        if let record = touched[name] { return record }
        return deleted.contains(name) ? nil : catalog[name]
    }

    /// Brings the stream into `touched` (once); `false` if it does not exist.
    mutating func touch(_ name: String) -> Bool {
        if touched[name] != nil { return true }
        guard let record = record(name) else { return false }
        touched[name] = record
        return true
    }

    mutating func perform(_ request: WriteRequest, _ db: Database) throws {
        switch request {
        case .append(let name, let payload, let autoCreate, let done):
            if !touch(name) {
                guard let autoCreate else {
                    return completions.append { done(.failure(.unknownStream(name))) }
                }
                do throws(StoreError) {
                    try StreamName.validate(name)
                    try autoCreate.validate()
                } catch {
                    return completions.append { done(.failure(error)) }
                }
                _ = try insertStream(name, autoCreate, db)
            }
            guard touched[name]!.info.terminal == nil else {
                return completions.append { done(.failure(.terminated(stream: name))) }
            }
            let sequence = touched[name]!.info.lastSequence + 1
            // A stream of capacity 0 keeps nothing: skip the insert, still number and
            // deliver the event live.
            if touched[name]!.info.config.capacity != 0 {
                let insert = RawStatement(
                    try db.cachedStatement(sql: "INSERT INTO event_log (stream_id, seq, time, payload) VALUES (?, ?, ?, ?)"), in: db)
                insert.bind(touched[name]!.id, at: 1)
                insert.bind(Int64(sequence), at: 2)
                insert.bind(timeText, at: 3)
                try insert.execute(blob: payload, at: 4)
                touched[name]!.info.byteCount += payload.count
            } else {
                touched[name]!.info.firstSequence = sequence + 1
            }
            touched[name]!.info.lastSequence = sequence
            let event = StoredEvent(sequence: sequence, timestamp: timeText, payload: payload)
            appended[name, default: []].append(event)
            completions.append { done(.success(event)) }

        case .create(let name, let config, let done):
            do throws(StoreError) {
                try StreamName.validate(name)
                try config.validate()
            } catch {
                return completions.append { done(.failure(error)) }
            }
            if let existing = record(name) {
                // Creating what exists with the same settings is a no-op, so that clients
                // can declare the streams they use at start-up (as JetStream's add does).
                let result: Result<StreamInfo, StoreError> =
                    existing.info.config == config ? .success(existing.info) : .failure(.streamExists(name))
                return completions.append { done(result) }
            }
            let record = try insertStream(name, config, db)
            completions.append { done(.success(record.info)) }

        case .delete(let name, let done):
            guard let record = record(name) else {
                return completions.append { done(.failure(.unknownStream(name))) }
            }
            try db.execute(sql: "DELETE FROM streams WHERE id = ?", arguments: [record.id])
            touched[name] = nil
            deleted.insert(name)
            appended[name] = nil
            completions.append { done(.success(())) }

        case .terminate(let name, let terminal, let done):
            guard touch(name) else {
                return completions.append { done(.failure(.unknownStream(name))) }
            }
            guard touched[name]!.info.terminal == nil else {
                return completions.append { done(.failure(.terminated(stream: name))) }
            }
            touched[name]!.info.terminal = terminal
            touched[name]!.info.terminalAt = time
            let info = touched[name]!.info
            completions.append { done(.success(info)) }

        case .reset(let name, let keepHistory, let done):
            guard touch(name) else {
                return completions.append { done(.failure(.unknownStream(name))) }
            }
            touched[name]!.info.terminal = nil
            touched[name]!.info.terminalAt = nil
            if !keepHistory {
                try db.execute(sql: "DELETE FROM event_log WHERE stream_id = ?", arguments: [touched[name]!.id])
                touched[name]!.info.firstSequence = touched[name]!.info.lastSequence + 1
                touched[name]!.info.byteCount = 0
            }
            let info = touched[name]!.info
            completions.append { done(.success(info)) }

        case .barrier(let done):
            completions.append { done(.success(())) }

        case .enforceRetention(let done):
            for record in catalog.all where record.info.config.maxAge != nil {
                _ = touch(record.info.name)
            }
            completions.append { done(.success(())) }
        }
    }

    private mutating func insertStream(_ name: String, _ config: StreamConfig, _ db: Database) throws -> Catalog.Record {
        try db.execute(
            sql: """
                INSERT INTO streams (name, capacity, max_bytes, max_age_seconds, created_at,
                                     source_command, source_connect, source_options)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                name, config.capacity, config.maxBytes, config.maxAge, timeText,
                config.source?.command, config.source?.connect.rawValue, config.source?.options,
            ])
        let record = Catalog.Record(
            id: db.lastInsertedRowID,
            info: StreamInfo(
                name: name, config: config, createdAt: time, firstSequence: 1, lastSequence: 0,
                byteCount: 0, terminal: nil, terminalAt: nil))
        touched[name] = record
        deleted.remove(name)
        return record
    }

    /// Trims every touched stream to its retention and writes its row.
    mutating func finish(_ db: Database) throws {
        for name in touched.keys {
            try Retention(now: time).trim(&touched[name]!, db)
            let record = touched[name]!
            let info = record.info
            let terminalKind: String? = switch info.terminal {
            case .completed: "completed"
            case .failed: "failed"
            case nil: nil
            }
            let terminalMessage: String? = if case .failed(let message) = info.terminal { message } else { nil }
            try db.cachedStatement(
                sql: """
                    UPDATE streams SET first_seq = ?, last_seq = ?, event_count = ?, byte_count = ?,
                        terminal = ?, terminal_message = ?, terminal_at = ?
                    WHERE id = ?
                    """
            ).execute(arguments: [
                Int64(info.firstSequence), Int64(info.lastSequence), info.eventCount, info.byteCount,
                terminalKind, terminalMessage, info.terminalAt.map(Timestamp.format), record.id,
            ])
        }
    }

    var changedRecords: [String: Catalog.Record?] {
        var changes: [String: Catalog.Record?] = touched.mapValues { $0 }
        for name in deleted { changes[name] = .some(nil) }
        return changes
    }

    var commitBatch: CommitBatch {
        var changes: [String: CommitBatch.Change] = [:]
        for (name, record) in touched {
            changes[name] = CommitBatch.Change(info: record.info, appended: appended[name] ?? [])
        }
        for name in deleted { changes[name] = CommitBatch.Change(info: nil, appended: []) }
        return CommitBatch(changes: changes)
    }
}
