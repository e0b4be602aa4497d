import Foundation
import ReplayModel

/// Appends: numbering, the conditions a publish carries (expected sequence, producers),
/// atomic sends, and checked writes (`StreamWrite`).
extension WriterRules {
    /// Appends to the stream (creating it with `autoCreate` if it is new and that is set),
    /// if `conditions` hold against the stream as this transaction has left it so far: the
    /// stored event, a producer's duplicate, or why it was refused. Throws only what fails
    /// the transaction.
    mutating func appendResult(
        _ payload: Data, to name: String, autoCreate: StreamConfig?, conditions: AppendConditions
    ) throws -> Result<Appended, StoreError> {
        let existing = try touch(name)
        if let existing, let refused = refusal(toAppendTo: existing) { return .failure(refused) }
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
            do throws(StoreError) { try admitNewStream(name, autoCreate) } catch { return .failure(error) }
            index = try insertStream(name, autoCreate)
        }
        if let full = sequenceNumbersLeft(for: 1, in: index) { return .failure(full) }
        guard
            let event = try append(
                payload, to: index, stamp: conditions.producer, trace: conditions.traceParent, key: conditions.key, ttl: conditions.ttl)
        else {
            return .failure(.terminated(stream: name))
        }
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
    mutating func loadProducer(_ key: ProducerKey) throws {
        if producerChanges[key] == nil, let stored = try db.producerState(key) { producerChanges[key] = stored }
    }

    /// `limitReached` if `count` more events would pass the last sequence number a
    /// stream's key can hold (`LogRowKey`); `nil` if they fit.
    /// Runs once per event: it reads the one field in place, since a copy of the stream's
    /// `StreamInfo` (strings, dates, settings) costs retains and releases on the writer.
    func sequenceNumbersLeft(for count: Int, in index: Int) -> StoreError? {
        guard streams[index].record.info.lastSequence + UInt64(count) > LogRowKey.maxSequence else { return nil }
        let name = streams[index].record.info.name
        return .limitReached("stream '\(name)' has used every sequence number (\(LogRowKey.maxSequence)); append to a new stream")
    }

    /// A checked write (see `StreamWrite`): its checks in a fixed order (a producer's retry
    /// is recognised even on a closed stream), then the events and the close. Its events cannot fail one by one, so no savepoint is needed.
    mutating func perform(_ write: StreamWrite) throws -> Result<StreamWriteOutcome, StoreError> {
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
            do throws(StoreError) { try admitNewStream(name, config) } catch { return .failure(error) }
            if let creator = write.creator, let limit = creator.limit, try db.streamsCreated(by: creator.name) >= limit {
                return .failure(.quotaExceeded("'\(creator.name)' has created \(limit) streams, as many as it may; delete one first"))
            }
            if let request = write.fork {
                switch try createFork(name, of: request, config) {
                case .success(let forked): index = forked
                case .failure(let error): return .failure(error)
                }
            } else {
                index = try insertStream(name, config)
            }
            if let creator = write.creator { try db.recordCreator(creator.name, of: streams[index].record.id) }
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
        if !write.payloads.isEmpty, let refused = refusal(toAppendTo: index) { return .failure(refused) }
        if let received = write.writerSequence {
            if let last = info.writerSequence, !last.utf8.lexicographicallyPrecedes(received.utf8) {
                return .failure(.writerSequenceRegression(stream: name, last: last, received: received))
            }
            streams[index].record.info.writerSequence = received
        }
        if let full = sequenceNumbersLeft(for: write.payloads.count, in: index) { return .failure(full) }
        // The producer's stamp goes on the publish's first event, which its runs map its pseq to.
        for (offset, payload) in write.payloads.enumerated() {
            _ = try append(
                payload, to: index, stamp: offset == 0 && producerKey != nil ? write.producer : nil, trace: write.traceParent, key: write.key,
                ttl: write.ttl)
        }
        if let stamp = write.producer, let producerKey {
            if write.payloads.isEmpty { db.publishedWithoutEvent(producerKey) }
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

    /// An atomic send: every event, or none. A savepoint undoes the rows of a send that
    /// fails part-way; a copy of this transaction's working state undoes the rest.
    mutating func appendAtomically(_ events: [AtomicAppend], token: UInt64) throws -> AppendResult {
        let before = self
        try db.savepoint()
        var sequences: [UInt64] = []
        sequences.reserveCapacity(events.count)
        for event in events {
            let result = try appendResult(
                event.payload, to: event.stream, autoCreate: autoCreate,
                conditions: AppendConditions(
                    expectedLastSequence: event.expectedLastSequence, traceParent: event.traceParent, key: event.key, ttl: event.ttl))
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

    /// Numbers and inserts one event, with the producer's stamp if it is a publish's first,
    /// the input event it came from if a derivation computed it, its publisher's trace
    /// context, its key and its time-to-live (else its stream's default); `nil` if the
    /// stream has ended.
    mutating func append(
        _ payload: Data, to index: Int, stamp: ProducerStamp? = nil, origin: String? = nil, trace: TraceParent? = nil, key: EventKey? = nil,
        ttl: EventTTL? = nil
    ) throws -> StoredEvent? {
        let record = streams[index].record
        guard record.info.terminal == nil else { return nil }
        let sequence = record.info.lastSequence + 1
        let (eventMillis, eventText) = record.lastTime > millis ? (record.lastTime, Timestamp.format(millis: record.lastTime)) : (millis, timeText)
        let hash = HashChain.link(
            after: record.chainHead, stream: record.info.name, sequence: sequence, millis: eventMillis, key: key, payload: payload)
        let expiresAt = (ttl ?? record.info.config.eventTTL.flatMap(EventTTL.init(seconds:)))?.expiry(committedAt: eventMillis)
        if expiresAt != nil { catalog.noteExpiringEvents() }
        // A stream of capacity 0 keeps nothing: skip the insert, still number and deliver
        // the event live (its chain goes on, with nothing retained before its base).
        if record.info.config.capacity != 0 {
            try db.insertEvent(
                stream: record.id, sequence: sequence, millis: eventMillis, payload: payload, stamp: stamp, origin: origin, trace: trace,
                key: key, expiresAt: expiresAt, hash: hash)
            streams[index].record.info.byteCount += payload.count
        } else {
            streams[index].record.info.firstSequence = sequence + 1
            streams[index].record.chainBase = hash
            if let stamp { db.publishedWithoutEvent(ProducerKey(stream: record.id, producer: stamp.id)) }
        }
        streams[index].record.chainHead = hash
        streams[index].record.info.lastSequence = sequence
        streams[index].record.lastTime = eventMillis
        appendedEvents += 1
        appendedBytes += payload.count
        let event = StoredEvent(
            sequence: sequence, timestamp: eventText, payload: payload, traceParent: trace, hash: hash, key: key, expiresAt: expiresAt)
        streams[index].appended.append(event)
        return event
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
