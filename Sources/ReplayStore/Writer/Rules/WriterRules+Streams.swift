import Foundation
import ReplayModel

/// Streams' lifecycle: admission of a new stream (written once, for every way a stream is
/// made), creation, deletion, the terminal event and its reset.
extension WriterRules {
    /// Whether a new stream may be made: its name, its settings, and an id its events can
    /// be stored under. A refusal fails the request, not the batch.
    func admitNewStream(_ name: String, _ config: StreamConfig) throws(StoreError) {
        try StoreError.validateStreamName(name)
        try config.validate()
        let refusal: StoreError?
        do { refusal = try db.roomForAStream() } catch { refusal = StoreError(error) }
        if let refusal { throw refusal }
    }

    /// Inserts an admitted stream's row and brings it into the working copies.
    mutating func insertStream(_ name: String, _ config: StreamConfig, fork: (StreamFork, sourceID: Int64)? = nil) throws -> Int {
        let id = try db.insertStream(name, config, createdAt: timeText, fork: fork)
        let record = Catalog.Record(
            id: id,
            info: StreamInfo(
                name: name, config: config, createdAt: time, firstSequence: 1, lastSequence: 0,
                byteCount: 0, terminal: nil, terminalAt: nil, fork: fork?.0))
        deleted.remove(name)
        return add(record, inserted: true)
    }

    mutating func create(_ name: String, _ config: StreamConfig) throws -> Result<StreamInfo, StoreError> {
        if let existing = try record(name) {
            // Creating what exists with the same settings is a no-op, so that clients can
            // declare the streams they use at start-up (as JetStream's add does).
            if !existing.info.isSoftDeleted, existing.info.config == config { return .success(existing.info) }
            // Settings that are not valid are named as such rather than as a conflict.
            do throws(StoreError) { try config.validate() } catch { return .failure(error) }
            return .failure(.streamExists(name))
        }
        do throws(StoreError) { try admitNewStream(name, config) } catch { return .failure(error) }
        let index = try insertStream(name, config)
        return .success(streams[index].record.info)
    }

    mutating func deleteByRequest(_ name: String) throws -> Result<Void, StoreError> {
        guard let record = try record(name), !record.info.isSoftDeleted else { return .failure(.unknownStream(name)) }
        try delete(record)
        return .success(())
    }

    /// Deletes a stream and its events. Its working copy (if any) stays in `streams`,
    /// unreachable by name; its producers and consumers go with its row (ON DELETE CASCADE).
    /// A stream that forks read from is only marked deleted (soft-deleted) and kept for
    /// them; deleting a fork then deletes such a source once no fork is left (and so on
    /// up the chain).
    mutating func delete(_ record: Catalog.Record) throws {
        let name = record.info.name
        if hasForks(name) {
            if let index = try indexByName[name] ?? touch(name) { streams[index].record.info.deletedAt = time }
            return
        }
        try db.deleteEvents(of: record.id)
        try db.deleteStream(record.id)
        indexByName[name] = nil
        deleted.insert(name)
        deletedIDs.append(record.id)
        if let source = record.info.fork?.source, let sourceRecord = try self.record(source), sourceRecord.info.isSoftDeleted, !hasForks(source) {
            try delete(sourceRecord)
        }
    }

    /// Whether any stream (deleted or not, as this transaction leaves them) is a fork of `name`.
    private func hasForks(_ name: String) -> Bool {
        if indexByName.values.contains(where: { streams[$0].record.info.fork?.source == name }) { return true }
        return catalog.all.contains { record in
            indexByName[record.info.name] == nil && !deleted.contains(record.info.name) && record.info.fork?.source == name
        }
    }

    /// Stores the stream's terminal event: nothing is appended after it.
    mutating func terminate(_ name: String, _ terminal: Terminal) throws -> Result<StreamInfo, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        guard streams[index].record.info.terminal == nil else { return .failure(.terminated(stream: name)) }
        streams[index].record.info.terminal = terminal
        streams[index].record.info.terminalAt = time
        return .success(streams[index].record.info)
    }

    /// Clears the terminal event, and the history unless `keepHistory`; numbering goes on.
    mutating func reset(_ name: String, keepHistory: Bool) throws -> Result<StreamInfo, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        streams[index].record.info.terminal = nil
        streams[index].record.info.terminalAt = nil
        if !keepHistory {
            try db.deleteEvents(of: streams[index].record.id)
            streams[index].record.info.firstSequence = streams[index].record.info.lastSequence + 1
            streams[index].record.chainBase = streams[index].record.chainHead
            streams[index].record.info.byteCount = 0
            streams[index].record.info.removedEvents = 0
        }
        return .success(streams[index].record.info)
    }
}
