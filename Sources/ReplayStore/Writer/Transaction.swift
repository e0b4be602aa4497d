import Foundation
import ReplayModel

/// Runs one batch of write requests in one transaction of a database (`LogTransaction`):
/// assigns sequence numbers, checks each request's conditions, inserts, trims each touched
/// stream to its retention, updates the stream rows; once the database has committed, the
/// catalog, the listeners and the requests' completions learn of it (`committed`).
/// Sequence numbers are assigned here, inside the transaction, so a failed transaction (a
/// full disk, a lost connection) leaves no hole: the catalog is untouched and the next
/// batch reuses the same numbers.
///
/// The state of one transaction: working copies of the streams it touches, what it
/// appended, and the completions to run once it has committed.
struct Transaction<DB: LogTransaction> {
    /// A stream this transaction changed: its record as of now, and its new events.
    struct Touched {
        var record: Catalog.Record
        var appended: [StoredEvent] = []
        /// Durable consumers written (added or moved) and removed.
        var consumersWritten: Set<String> = []
        var consumersRemoved: Set<String> = []
    }

    let catalog: Catalog
    /// The database side of this transaction.
    let db: DB
    let time: Date
    /// The commit's time in ms; a stream whose newest event is later (the clock was set
    /// back) keeps its own time instead, so times never decrease within a stream.
    let millis: Int64
    let timeText: String
    /// Working copies, mutated in place through their index: an append looks its stream's
    /// name up once, then works on the array element (hashing the name for every field
    /// was a measurable share of the writer's time).
    var streams: [Touched] = []
    var indexByName: [String: Int] = [:]
    /// Streams this transaction deleted (and did not create again), and their ids.
    var deleted: Set<String> = []
    var deletedIDs: [Int64] = []
    /// Producer states as this transaction leaves them.
    var producerChanges: [ProducerKey: ProducerState] = [:]
    var completions: [@Sendable () -> Void] = []
    /// The results of `publish` requests, told to their sinks once per batch.
    var sinks = SinkResults()
    /// Events and payload bytes appended, for the metrics.
    var appendedEvents = 0
    var appendedBytes = 0

    /// Streams read again because another writer changed them (`refresh`): told to the
    /// catalog and listeners without being written.
    var refreshed: [String: Catalog.Record?] = [:]
    /// The events another daemon appended to a refreshed stream, read once here so that
    /// every cursor of this daemon is served from the tail ring rather than each reading
    /// them from the database.
    var refreshedEvents: [String: [StoredEvent]] = [:]
    /// At most this many events are read per refreshed stream; a larger step is left to
    /// the cursors' own paged reads.
    static var refreshEventLimit: Int { 1024 }
    /// When producers idle past their lifetime were last forgotten.
    let producerExpiry: ProducerExpiry
    /// Whether this transaction forgot them (a cache of them is then stale).
    var expiredProducers = false

    init(catalog: Catalog, db: DB, time: Date, producerExpiry: ProducerExpiry) {
        self.catalog = catalog
        self.db = db
        self.producerExpiry = producerExpiry
        // One commit time for the whole batch: cheap, and times never go backwards in it.
        self.millis = Timestamp.millis(time)
        self.time = Timestamp.date(millis: millis)
        self.timeText = Timestamp.format(millis: millis)
    }

    /// Forgets a previous attempt (GRDB may retry the block only on our own error paths,
    /// but a clean slate makes that harmless).
    mutating func reset() {
        streams = []
        indexByName = [:]
        deleted = []
        deletedIDs = []
        producerChanges = [:]
        completions = []
        sinks = SinkResults()
        appendedEvents = 0
        appendedBytes = 0
        refreshed = [:]
        refreshedEvents = [:]
        expiredProducers = false
    }

    /// The stream as this transaction leaves it so far, without bringing it in.
    mutating func record(_ name: String) throws -> Catalog.Record? {
        if let index = indexByName[name] { return streams[index].record }
        if deleted.contains(name) { return nil }
        let cached = catalog[name]
        let found = try db.record(name, cached: cached)
        learn(name, found, cached: cached)
        return found
    }

    /// A stream another daemon created or deleted (a shared database), found while reading
    /// it: the catalog and the hubs learn it with this commit.
    private mutating func learn(_ name: String, _ found: Catalog.Record?, cached: Catalog.Record?) {
        if (found == nil) != (cached == nil), refreshed[name] == nil { refreshed[name] = .some(found) }
    }

    /// The stream's index in `streams` (bringing it in once); `nil` if it does not exist.
    /// A stream deleted while forks read from it (soft-deleted) counts as not existing.
    mutating func touch(_ name: String) throws -> Int? {
        if let index = indexByName[name] { return streams[index].record.info.isSoftDeleted ? nil : index }
        guard !deleted.contains(name) else { return nil }
        let cached = catalog[name]
        let found = try db.record(name, cached: cached)
        learn(name, found, cached: cached)
        guard let record = found, !record.info.isSoftDeleted else { return nil }
        return add(record)
    }

    private mutating func add(_ record: Catalog.Record) -> Int {
        streams.append(Touched(record: record))
        indexByName[record.info.name] = streams.count - 1
        return streams.count - 1
    }

    /// Runs the batch inside the database's open transaction.
    mutating func run(_ batch: [WriteRequest]) throws {
        reset()
        if DB.locksStreamsUpFront {
            var names = Set<String>()
            for request in batch {
                names.formUnion(request.streamNames)
                // The retention pass touches the streams with an age limit or an expiry: lock
                // them with the rest, in the one order.
                if case .enforceRetention = request {
                    for record in catalog.all where record.info.config.maxAge != nil || record.info.config.expiry != nil {
                        names.insert(record.info.name)
                    }
                }
            }
            try db.prepare(streams: names)
        }
        for request in batch { try perform(request) }
        try finish()
    }

    /// After the database committed: metrics, the catalog, listeners, then the requests.
    func committed(_ batch: [WriteRequest], started: ContinuousClock.Instant, listeners: CommitListeners) {
        StoreMetrics.commitDuration.record(duration: ContinuousClock.now - started)
        StoreMetrics.commits.increment()
        StoreMetrics.batchSize.record(batch.count)
        StoreMetrics.eventsPublished.increment(by: appendedEvents)
        StoreMetrics.bytesPublished.increment(by: appendedBytes)
        catalog.apply(changedRecords)
        listeners.notify(commitBatch)
        sinks.deliver()
        for completion in completions { completion() }
    }

    /// When the transaction failed: every request fails with the same error.
    static func failed(_ batch: [WriteRequest], _ failure: StoreError) {
        StoreMetrics.failedCommits.increment()
        var sinks = SinkResults()
        for request in batch { request.fail(failure, sinks: &sinks) }
        sinks.deliver()
    }

    private mutating func perform(_ request: WriteRequest) throws {
        switch request {
        case .append(let name, let payload, let autoCreate, let done):
            let result = try appendResult(payload, to: name, autoCreate: autoCreate, conditions: .none)
            completions.append {
                done(result.flatMap { appended in
                    guard case .stored(let event) = appended else { return .failure(.invalidConfig("a plain append has no duplicate")) }
                    return .success(event)
                })
            }

        case .publish(let name, let payload, let autoCreate, let conditions, let sink, let token):
            let result = try appendResult(payload, to: name, autoCreate: autoCreate, conditions: conditions)
            sinks.add(sink, AppendResult(token: token, sequence: result.map(\.sequence)))

        case .atomic(let events, let autoCreate, let sink, let token):
            sinks.add(sink, try appendAtomically(events, autoCreate: autoCreate, token: token))

        case .streamWrite(let write, let done):
            let result = try perform(write)
            completions.append { done(result) }

        case .openConsumer(let name, let consumer, let initialNext, let done):
            guard let index = try touch(name) else {
                return completions.append { done(.failure(.unknownStream(name))) }
            }
            let info = streams[index].record.info
            if streams[index].record.consumers[consumer] == nil {
                let acked = min(info.lastSequence, max(initialNext(info), 1) - 1)
                streams[index].record.consumers[consumer] = ConsumerInfo(name: consumer, ackedSequence: acked, createdAt: time, updatedAt: time)
                streams[index].consumersWritten.insert(consumer)
                streams[index].consumersRemoved.remove(consumer)
            }
            let start = ConsumerStart(ackedSequence: streams[index].record.consumers[consumer]!.ackedSequence, lastSequence: info.lastSequence)
            completions.append { done(.success(start)) }

        case .acknowledge(let name, let consumer, let sequence, let done):
            guard let index = try touch(name) else {
                return completions.append { done(.failure(.unknownStream(name))) }
            }
            guard let current = streams[index].record.consumers[consumer] else {
                return completions.append { done(.failure(.unknownConsumer(stream: name, name: consumer))) }
            }
            let last = streams[index].record.info.lastSequence
            guard sequence <= last else {
                return completions.append { done(.failure(.invalidAck("\(sequence) is beyond the last sequence number of '\(name)', \(last)"))) }
            }
            guard sequence >= current.ackedSequence else {
                return completions.append {
                    done(.failure(.invalidAck("consumer '\(consumer)' already acknowledged up to \(current.ackedSequence); acknowledgements are cumulative and never go back")))
                }
            }
            // Acknowledgements coalesce: the row is written once per transaction, the last wins.
            streams[index].record.consumers[consumer]?.ackedSequence = sequence
            streams[index].record.consumers[consumer]?.updatedAt = time
            streams[index].consumersWritten.insert(consumer)
            completions.append { done(.success(())) }

        case .deleteConsumer(let name, let consumer, let done):
            guard let index = try touch(name), streams[index].record.consumers.removeValue(forKey: consumer) != nil else {
                return completions.append { done(.failure(.unknownConsumer(stream: name, name: consumer))) }
            }
            streams[index].consumersWritten.remove(consumer)
            streams[index].consumersRemoved.insert(consumer)
            completions.append { done(.success(())) }

        case .create(let name, let config, let done):
            do throws(StoreError) {
                try StoreError.validateStreamName(name)
                try config.validate()
            } catch {
                return completions.append { done(.failure(error)) }
            }
            if let existing = try record(name) {
                if existing.info.isSoftDeleted { return completions.append { done(.failure(.streamExists(name))) } }
                // Creating what exists with the same settings is a no-op, so that clients
                // can declare the streams they use at start-up (as JetStream's add does).
                let result: Result<StreamInfo, StoreError> =
                    existing.info.config == config ? .success(existing.info) : .failure(.streamExists(name))
                return completions.append { done(result) }
            }
            do throws(StoreError) {
                try checkRoomForAStream()
            } catch {
                return completions.append { done(.failure(error)) }
            }
            let index = try insertStream(name, config)
            let info = streams[index].record.info
            completions.append { done(.success(info)) }

        case .delete(let name, let done):
            guard let record = try record(name), !record.info.isSoftDeleted else {
                return completions.append { done(.failure(.unknownStream(name))) }
            }
            try delete(record)
            completions.append { done(.success(())) }

        case .terminate(let name, let terminal, let done):
            guard let index = try touch(name) else {
                return completions.append { done(.failure(.unknownStream(name))) }
            }
            guard streams[index].record.info.terminal == nil else {
                return completions.append { done(.failure(.terminated(stream: name))) }
            }
            streams[index].record.info.terminal = terminal
            streams[index].record.info.terminalAt = time
            let info = streams[index].record.info
            completions.append { done(.success(info)) }

        case .reset(let name, let keepHistory, let done):
            guard let index = try touch(name) else {
                return completions.append { done(.failure(.unknownStream(name))) }
            }
            streams[index].record.info.terminal = nil
            streams[index].record.info.terminalAt = nil
            if !keepHistory {
                try db.deleteEvents(of: streams[index].record.id)
                streams[index].record.info.firstSequence = streams[index].record.info.lastSequence + 1
                streams[index].record.info.byteCount = 0
            }
            let info = streams[index].record.info
            completions.append { done(.success(info)) }

        case .barrier(let done):
            completions.append { done(.success(())) }

        case .refresh(let names):
            for name in names where indexByName[name] == nil && !deleted.contains(name) {
                let record = try db.committedRecord(name)
                refreshed[name] = .some(record)
                if let record, let known = catalog[name], known.id == record.id,
                    record.info.lastSequence > known.info.lastSequence,
                    record.info.lastSequence - known.info.lastSequence <= UInt64(Self.refreshEventLimit)
                {
                    let segments = LogSegments(of: record, from: known.info.lastSequence + 1, through: record.info.lastSequence) { catalog[$0] }
                    var events: [StoredEvent] = []
                    try db.forEachEvent(segments, limit: Self.refreshEventLimit, byteBudget: 1 << 20) { sequence, time, payload in
                        events.append(StoredEvent(sequence: sequence, timestamp: String(decoding: time, as: UTF8.self), payload: Data(payload)))
                    }
                    // Only a complete, contiguous run can go to the ring (retention may have
                    // trimmed some already, or the byte budget stopped the read).
                    if events.first?.sequence == known.info.lastSequence + 1, events.last?.sequence == record.info.lastSequence {
                        refreshedEvents[name] = events
                    }
                }
            }

        case .enforceRetention(let done):
            for record in catalog.all where record.info.config.maxAge != nil {
                _ = try touch(record.info.name)
            }
            // Streams past their expiry go as a whole (as their working copy in this batch has it).
            for stored in catalog.all where stored.info.config.expiry != nil && !stored.info.isSoftDeleted {
                guard let current = try record(stored.info.name), let deadline = catalog.deadline(of: current), deadline <= millis else { continue }
                try delete(current)
            }
            if producerExpiry.due(now: millis) {
                try db.expireProducers(before: millis - ProducerState.idleLifetimeMillis)
                expiredProducers = true
            }
            completions.append { done(.success(())) }
        }
    }

    /// Appends to the stream (creating it with `autoCreate` if it is new and that is set),
    /// if `conditions` hold against the stream as this transaction has left it so far: the
    /// stored event, a producer's duplicate, or why it was refused. Throws only what fails
    /// the transaction.
    private mutating func appendResult(
        _ payload: Data, to name: String, autoCreate: StreamConfig?, conditions: AppendConditions
    ) throws -> Result<Appended, StoreError> {
        let existing = try touch(name)
        if let expected = conditions.expectedLastSequence {
            let last = existing.map { streams[$0].record.info.lastSequence } ?? 0
            guard last == expected else { return .failure(.wrongLastSequence(stream: name, last: last, expected: expected)) }
        }
        // The producer's working state, found once per event: its index in `producerChanges`
        // (nothing is inserted there before it is used again).
        var producer: Dictionary<ProducerKey, ProducerState>.Index?
        if let stamp = conditions.producer, let existing {
            let key = ProducerKey(stream: streams[existing].record.id, producer: stamp.id)
            try loadProducer(key)
            producer = producerChanges.index(forKey: key)
            switch ProducerState.judge(producer.map { producerChanges.values[$0] }, stamp, stream: name) {
            case .accept: break
            case .duplicate(let sequence?): return .success(.duplicate(sequence))
            case .duplicate(nil): return .failure(.forgottenDuplicate(stream: name, producer: stamp.id, pseq: stamp.sequence))
            case .refuse(let error): return .failure(error)
            }
        } else if let stamp = conditions.producer, stamp.sequence != 0 {
            return .failure(.producerSequenceGap(stream: name, producer: stamp.id, expected: 0, received: stamp.sequence))
        }
        let index: Int
        if let existing {
            index = existing
        } else {
            guard let autoCreate else { return .failure(.unknownStream(name)) }
            do throws(StoreError) {
                try StoreError.validateStreamName(name)
                try autoCreate.validate()
                try checkRoomForAStream()
            } catch {
                return .failure(error)
            }
            index = try insertStream(name, autoCreate)
        }
        guard streams[index].record.info.lastSequence < EventKey.maxSequence else {
            return .failure(.limitReached("stream '\(name)' has used every sequence number (\(EventKey.maxSequence)); publish to a new stream"))
        }
        guard let event = try append(payload, to: index) else { return .failure(.terminated(stream: name)) }
        if let stamp = conditions.producer {
            if let producer {
                producerChanges.values[producer].record(stamp, sequence: event.sequence, now: millis)
            } else {
                var first = ProducerState(first: stamp, now: millis)
                first.record(stamp, sequence: event.sequence, now: millis)
                producerChanges[ProducerKey(stream: streams[index].record.id, producer: stamp.id)] = first
            }
        }
        return .success(.stored(event))
    }

    /// Brings a producer's stored state into this transaction's working copies, once.
    private mutating func loadProducer(_ key: ProducerKey) throws {
        if producerChanges[key] == nil, let stored = try db.producerState(key) { producerChanges[key] = stored }
    }

    /// A write of the HTTP front door (see `StreamWrite`): the checks in the protocol's
    /// order (a producer's retry is recognised even on a closed stream), then the events
    /// and the close. Its events cannot fail one by one, so no savepoint is needed.
    private mutating func perform(_ write: StreamWrite) throws -> Result<StreamWriteOutcome, StoreError> {
        let name = write.stream
        var created = false
        let index: Int
        if let existing = try touch(name) {
            if write.create != nil { return .success(.existing(streams[existing].record.info)) }
            index = existing
        } else {
            guard let config = write.create else { return .failure(.unknownStream(name)) }
            // A soft-deleted stream keeps its name until its forks are gone.
            if try record(name) != nil { return .failure(.streamExists(name)) }
            do throws(StoreError) {
                try StoreError.validateStreamName(name)
                try config.validate()
                try checkRoomForAStream()
            } catch {
                return .failure(error)
            }
            if let request = write.fork {
                switch try createFork(name, of: request, config) {
                case .success(let forked): index = forked
                case .failure(let error): return .failure(error)
                }
            } else {
                index = try insertStream(name, config)
            }
            created = true
        }
        var producerKey: ProducerKey?
        if let stamp = write.producer {
            let key = ProducerKey(stream: streams[index].record.id, producer: stamp.id)
            try loadProducer(key)
            switch ProducerState.judge(producerChanges[key], stamp, stream: name) {
            case .accept: producerKey = key
            case .duplicate:
                let last = producerChanges[key]?.lastPseq ?? stamp.sequence
                return .success(.duplicate(streams[index].record.info, lastProducerSequence: last))
            case .refuse(let error): return .failure(error)
            }
        }
        let info = streams[index].record.info
        if info.terminal != nil {
            return write.payloads.isEmpty && write.close ? .success(.alreadyClosed(info)) : .failure(.terminated(stream: name))
        }
        if let received = write.writerSequence {
            if let last = info.writerSequence, !last.utf8.lexicographicallyPrecedes(received.utf8) {
                return .failure(.writerSequenceRegression(stream: name, last: last, received: received))
            }
            streams[index].record.info.writerSequence = received
        }
        guard info.lastSequence + UInt64(write.payloads.count) <= EventKey.maxSequence else {
            return .failure(.limitReached("stream '\(name)' has used every sequence number (\(EventKey.maxSequence)); write to a new stream"))
        }
        for payload in write.payloads { _ = try append(payload, to: index) }
        if let stamp = write.producer, let producerKey {
            let first = info.lastSequence + 1
            if producerChanges[producerKey] == nil { producerChanges[producerKey] = ProducerState(first: stamp, now: millis) }
            producerChanges[producerKey]?.record(stamp, sequence: first, now: millis)
        }
        if write.close {
            streams[index].record.info.terminal = .completed
            streams[index].record.info.terminalAt = time
        }
        streams[index].record.lastWrite = millis
        let after = streams[index].record.info
        return .success(created ? .created(after) : .appended(after))
    }

    /// Deletes a stream and its events. Its working copy (if any) stays in `streams`,
    /// unreachable by name; its producers and consumers go with its row (ON DELETE CASCADE).
    /// A stream that forks read from is only marked deleted (soft-deleted) and kept for
    /// them; deleting a fork then deletes such a source once no fork is left (and so on
    /// up the chain).
    private mutating func delete(_ record: Catalog.Record) throws {
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

    /// Creates the fork `name` of `request.source`: a row that inherits the source's events
    /// up to the fork point, read from the source, never copied. A sub-offset inside an
    /// event makes that event's first bytes the fork's own first event.
    private mutating func createFork(
        _ name: String, of request: ForkRequest, _ config: StreamConfig
    ) throws -> Result<Int, StoreError> {
        guard let source = try record(request.source) else { return .failure(.unknownStream(request.source)) }
        guard !source.info.isSoftDeleted else { return .failure(.forkOfDeletedStream(request.source)) }
        let tail = source.info.lastSequence
        let anchor = request.sequence ?? tail
        guard anchor <= tail else {
            return .failure(.invalidFork("stream '\(request.source)' ends at sequence \(tail); it cannot be forked after \(anchor)"))
        }
        var inherited = anchor
        var prefix: Data?
        if request.subOffset > 0 {
            guard anchor < tail else { return .failure(.invalidFork("a sub-offset needs an event after the fork offset")) }
            if request.subOffsetCountsEvents {
                guard request.subOffset <= tail - anchor else {
                    return .failure(.invalidFork("a sub-offset of \(request.subOffset) messages passes the end of stream '\(request.source)'"))
                }
                inherited = anchor + request.subOffset
            } else {
                var next = Data()
                let segments = LogSegments(of: source, from: anchor + 1, through: anchor + 1) { name in
                    indexByName[name].map { streams[$0].record } ?? catalog[name]
                }
                try db.forEachEvent(segments, limit: 1, byteBudget: .max) { _, _, payload in next = Data(payload) }
                guard request.subOffset <= UInt64(next.count) else {
                    return .failure(.invalidFork("a sub-offset of \(request.subOffset) bytes passes the next event (\(next.count) bytes)"))
                }
                if request.subOffset == UInt64(next.count) { inherited = anchor + 1 } else { prefix = next.prefix(Int(request.subOffset)) }
            }
        }
        let fork = StreamFork(source: request.source, sequence: inherited, requestedSequence: anchor, requestedSubOffset: request.subOffset)
        let index = try insertStream(name, config, fork: (fork, source.id))
        streams[index].record.info.lastSequence = inherited
        streams[index].record.info.firstSequence = min(max(source.info.firstSequence, 1), inherited + 1)
        streams[index].record.lastTime = source.lastTime
        if let prefix { _ = try append(prefix, to: index) }
        return .success(index)
    }

    /// An atomic send: every event, or none. A savepoint undoes the rows of a send that
    /// fails part-way; a copy of this transaction's working state undoes the rest.
    private mutating func appendAtomically(
        _ events: [AtomicAppend], autoCreate: StreamConfig?, token: UInt64
    ) throws -> AppendResult {
        let before = self
        try db.savepoint()
        var sequences: [UInt64] = []
        sequences.reserveCapacity(events.count)
        for event in events {
            let result = try appendResult(
                event.payload, to: event.stream, autoCreate: autoCreate,
                conditions: AppendConditions(expectedLastSequence: event.expectedLastSequence))
            switch result {
            case .success(let appended):
                sequences.append(appended.sequence)
            case .failure(let error):
                try db.rollbackToSavepoint()
                self = before
                return AppendResult(token: token, sequence: .failure(error))
            }
        }
        try db.releaseSavepoint()
        guard let first = sequences.first else {
            return AppendResult(token: token, sequence: .failure(.invalidConfig("an atomic send needs at least one event")))
        }
        return AppendResult(token: token, sequence: .success(first), more: Array(sequences.dropFirst()))
    }

    /// Numbers and inserts one event; `nil` if the stream has ended.
    private mutating func append(_ payload: Data, to index: Int) throws -> StoredEvent? {
        let record = streams[index].record
        guard record.info.terminal == nil else { return nil }
        let sequence = record.info.lastSequence + 1
        let (eventMillis, eventText) = record.lastTime > millis ? (record.lastTime, Timestamp.format(millis: record.lastTime)) : (millis, timeText)
        // A stream of capacity 0 keeps nothing: skip the insert, still number and deliver
        // the event live.
        if record.info.config.capacity != 0 {
            try db.insertEvent(stream: record.id, sequence: sequence, millis: eventMillis, payload: payload)
            streams[index].record.info.byteCount += payload.count
        } else {
            streams[index].record.info.firstSequence = sequence + 1
        }
        streams[index].record.info.lastSequence = sequence
        streams[index].record.lastTime = eventMillis
        appendedEvents += 1
        appendedBytes += payload.count
        let event = StoredEvent(sequence: sequence, timestamp: eventText, payload: payload)
        streams[index].appended.append(event)
        return event
    }

    /// A new stream needs an id its events can be stored under (a failed request, not a
    /// failed batch).
    private func checkRoomForAStream() throws(StoreError) {
        let refusal: StoreError?
        do { refusal = try db.roomForAStream() } catch { refusal = StoreError(error) }
        if let refusal { throw refusal }
    }

    private mutating func insertStream(_ name: String, _ config: StreamConfig, fork: (StreamFork, sourceID: Int64)? = nil) throws -> Int {
        let id = try db.insertStream(name, config, createdAt: timeText, fork: fork)
        let record = Catalog.Record(
            id: id,
            info: StreamInfo(
                name: name, config: config, createdAt: time, firstSequence: 1, lastSequence: 0,
                byteCount: 0, terminal: nil, terminalAt: nil, fork: fork?.0))
        deleted.remove(name)
        return add(record)
    }

    /// Trims every touched stream to its retention and writes its row.
    mutating func finish() throws {
        // The streams changed that still exist (a deleted one's copy is unreachable by name).
        for index in indexByName.values {
            try Retention(now: time).trim(&streams[index].record, db)
            let record = streams[index].record
            try db.updateStream(record)
            for name in streams[index].consumersWritten {
                guard let consumer = record.consumers[name] else { continue }
                try db.writeConsumer(stream: record.id, consumer)
            }
            for name in streams[index].consumersRemoved {
                try db.deleteConsumer(stream: record.id, name: name)
            }
        }
        try db.writeProducers(producerChanges)
    }

    var changedRecords: [String: Catalog.Record?] {
        var changes = refreshed
        for name in deleted { changes[name] = .some(nil) }
        for (name, index) in indexByName { changes[name] = streams[index].record }
        return changes
    }

    var commitBatch: CommitBatch {
        var changes: [String: CommitBatch.Change] = [:]
        for (name, record) in refreshed {
            changes[name] = CommitBatch.Change(info: record?.info, appended: refreshedEvents[name] ?? [])
        }
        for name in deleted { changes[name] = CommitBatch.Change(info: nil, appended: []) }
        for (name, index) in indexByName {
            changes[name] = CommitBatch.Change(info: streams[index].record.info, appended: streams[index].appended)
        }
        return CommitBatch(changes: changes)
    }
}

/// What an append did: stored a new event, or recognised a producer's retry.
enum Appended {
    case stored(StoredEvent)
    case duplicate(UInt64)

    var sequence: UInt64 {
        switch self {
        case .stored(let event): event.sequence
        case .duplicate(let sequence): sequence
        }
    }
}
