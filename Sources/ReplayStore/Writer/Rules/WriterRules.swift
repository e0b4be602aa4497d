import Foundation
import ReplayModel

/// The writer's rules, applied to one batch of write requests inside one transaction of a
/// database (`LogTransaction`): assigns sequence numbers, checks each request's
/// conditions, inserts, trims each touched stream to its retention, updates the stream
/// rows; once the database has committed, the catalog, the listeners and the requests'
/// completions learn of it (`committed`). Sequence numbers are assigned here, inside the
/// transaction, so a failed transaction (a full disk, a lost connection) leaves no hole:
/// the catalog is untouched and the next batch reuses the same numbers.
///
/// This file holds the batch's working state and its life (run, finish, commit); the
/// handlers are in files by concern beside it: appends (`+Appends`), streams' lifecycle
/// and admission (`+Streams`), durable consumers (`+Consumers`), retention and another
/// daemon's commits (`+Retention`, `+Refresh`), forks (`+Forks`), derivations (`+Derivations`),
/// scheduled events (`+Scheduling`).
struct WriterRules<DB: LogTransaction> {
    /// A stream this transaction changed: its record as of now, and its new events.
    struct Touched {
        var record: Catalog.Record
        var appended: [StoredEvent] = []
        /// Durable consumers written (added or moved) and removed.
        var consumersWritten: Set<String> = []
        var consumersRemoved: Set<String> = []
        /// Consumer groups changed and removed, and the groups as the transaction found
        /// them: the pending events written are the difference.
        var groupsWritten: Set<String> = []
        var groupsRemoved: Set<String> = []
        let groupsBefore: [String: ConsumerGroup]
        /// The stream's row as the transaction found it (`nil`: inserted by it). A batch of
        /// a work queue's ACKs and hand-outs changes the groups only: rewriting the row
        /// anyway cost a page in the WAL per commit.
        let rowBefore: (info: StreamInfo, lastTime: Int64)?

        init(record: Catalog.Record, inserted: Bool) {
            self.record = record
            self.groupsBefore = record.groups
            self.rowBefore = inserted ? nil : (record.info, record.lastTime)
        }

        /// Whether the stream's row must be written.
        var rowChanged: Bool {
            guard let rowBefore else { return true }
            return rowBefore.info != record.info || rowBefore.lastTime != record.lastTime
        }
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
    /// Derivations as this transaction leaves them, by their derived stream's id.
    var derivationChanges: [Int64: Derivation] = [:]
    var completions: [@Sendable () -> Void] = []
    /// Stream writes' completions (every HTTP append is one) and their results, kept as
    /// they are: a closure over the two, as `completions` holds, is an allocation per write.
    var streamWrites: [StreamWriteAnswer] = []
    /// The results of `appendToSink` and `atomic` requests, told to their sinks once per batch.
    var sinks = SinkResults()
    /// Events and payload bytes appended, for the metrics.
    var appendedEvents = 0
    var appendedBytes = 0

    /// Group members waiting for work, between batches; this batch's changes to them are
    /// told once it committed: the hand-outs that started waiting, the waiters answered.
    let waiting: WaitingMembers
    var newWaiters: [WaitingMembers.Waiter] = []
    var answeredWaiters: Set<WaitTicket> = []
    /// Waiters tried again (still waiting, with their groups' next due time).
    var retriedWaiters: [WaitingMembers.Waiter] = []
    /// Whether this batch serves the waiters whose time came (`serveDueWaiters`).
    var servesDueWaiters = false

    /// Scheduled events: the alarm that asks for the next drain (`ScheduledAlarm`); the
    /// earliest due time this batch scheduled; whether it drained due events, and all of
    /// them; the streams with due events, locked up front on a shared database; what it
    /// appended and dropped; and what the alarm is told once it committed.
    let alarm: ScheduledAlarm
    var earliestScheduled: Int64?
    var drainedSchedule: DrainOutcome?
    var dueStreams: [String] = []
    /// The streams of the expired events this batch removes, locked up front where the
    /// database is shared (`expireEvents`).
    var expiringStreams: [String] = []
    /// Streams whose scheduled events this batch appended, dropped or cancelled.
    var scheduledLeft: Set<Int> = []
    var appendedDueEvents = 0
    /// Events this batch removed because they expired (`expireEvents`).
    var expiredEvents = 0
    /// Events this batch's compaction removed (`removeCompacted`).
    var compactedEvents = 0
    var droppedDueEvents = 0
    var alarmChange: ScheduledAlarm.Change?

    enum DrainOutcome {
        /// Every event due by the batch's time was appended.
        case drained
        /// A batch's worth was; more are due.
        case more
    }

    /// Streams read again because another writer changed them (`refresh`): told to the
    /// catalog and listeners without being written.
    var refreshed: [String: Catalog.Record?] = [:]
    /// The events another daemon appended to a refreshed stream, read once here so that
    /// every cursor of this daemon is served from the tail ring rather than each reading
    /// them from the database.
    var refreshedEvents: [String: [StoredEvent]] = [:]
    /// Whether this process reads a stream live (`EventStore.setLiveReaders`): a refreshed
    /// stream no one here reads is not read back.
    var liveReaders: @Sendable (String) -> Bool = { _ in true }
    /// When producers idle past their lifetime were last forgotten.
    let producerExpiry: ProducerExpiry

    /// How a stream an append names is created if it does not exist (the store's
    /// `Options.autoCreate`); `nil`: the append is refused.
    let autoCreate: StreamConfig?

    init(
        catalog: Catalog, db: DB, time: Date, autoCreate: StreamConfig?, producerExpiry: ProducerExpiry, waiting: WaitingMembers,
        alarm: ScheduledAlarm
    ) {
        self.catalog = catalog
        self.alarm = alarm
        self.autoCreate = autoCreate
        self.db = db
        self.producerExpiry = producerExpiry
        self.waiting = waiting
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
        derivationChanges = [:]
        completions = []
        streamWrites = []
        sinks = SinkResults()
        appendedEvents = 0
        appendedBytes = 0
        refreshed = [:]
        refreshedEvents = [:]
        newWaiters = []
        answeredWaiters = []
        retriedWaiters = []
        servesDueWaiters = false
        earliestScheduled = nil
        drainedSchedule = nil
        dueStreams = []
        expiringStreams = []
        scheduledLeft = []
        appendedDueEvents = 0
        expiredEvents = 0
        compactedEvents = 0
        droppedDueEvents = 0
        alarmChange = nil
    }

    // MARK: The working copies

    /// The stream as this transaction leaves it so far, without bringing it in.
    mutating func record(_ name: String) throws -> Catalog.Record? {
        if let index = indexByName[name] { return streams[index].record }
        return try lookUp(name)
    }

    /// The stream's index in `streams` (bringing it in once); `nil` if it does not exist.
    /// A stream deleted while forks read from it (soft-deleted) counts as not existing.
    mutating func touch(_ name: String) throws -> Int? {
        if let index = indexByName[name] { return streams[index].record.info.isSoftDeleted ? nil : index }
        guard let record = try lookUp(name), !record.info.isSoftDeleted else { return nil }
        return add(record)
    }

    /// A stream this transaction has not brought in yet, as the database has it. One
    /// another daemon created or deleted (a shared database), found while reading it: the
    /// catalog and the hubs learn it with this commit.
    mutating func lookUp(_ name: String) throws -> Catalog.Record? {
        guard !deleted.contains(name) else { return nil }
        let cached = catalog[name]
        let found = try db.record(name, cached: cached)
        if (found == nil) != (cached == nil), refreshed[name] == nil { refreshed[name] = .some(found) }
        return found
    }

    mutating func add(_ record: Catalog.Record, inserted: Bool = false) -> Int {
        streams.append(Touched(record: record, inserted: inserted))
        indexByName[record.info.name] = streams.count - 1
        return streams.count - 1
    }

    // MARK: The batch's life

    /// Runs the batch inside the database's open transaction.
    mutating func run(_ batch: [WriteRequest]) throws {
        reset()
        if DB.locksStreamsUpFront { try lockUpFront(batch) }
        // By index: the element is borrowed where `for request in batch` copied each request.
        for index in batch.indices { try perform(batch[index]) }
        try finish()
    }

    /// On a database several daemons share, the rows a batch touches are locked first, in
    /// name order, so that daemons number each stream contiguously and never deadlock.
    private mutating func lockUpFront(_ batch: [WriteRequest]) throws {
        var names = Set<String>()
        for request in batch {
            names.formUnion(request.streamNames)
            // The retention pass touches the streams with an age limit or an expiry: lock
            // them with the rest, in the one order.
            if case .enforceRetention = request { names.formUnion(retentionCandidates.map(\.info.name)) }
            if case .serveDueWaiters = request { names.formUnion(waiting.streams(dueBy: millis)) }
            if case .expireEvents = request, expiringStreams.isEmpty {
                expiringStreams = try db.streamsWithExpiredEvents(by: millis, limit: Self.expiredEventsPerBatch)
                names.formUnion(expiringStreams)
            }
            if case .appendDueEvents = request, dueStreams.isEmpty {
                dueStreams = try db.streamsWithDueEvents(by: millis, limit: Self.dueEventsPerBatch)
                names.formUnion(dueStreams)
            }
        }
        // Group members waiting on these streams may be handed work, and dead letters made.
        names.formUnion(waiting.deadLetters(of: names))
        try db.prepare(streams: names)
    }

    /// One request: a dispatch to the handler of its concern.
    private mutating func perform(_ request: WriteRequest) throws {
        switch request {
        case .appendWithCompletion(let name, let payload, let done):
            let result = try appendResult(payload, to: name, autoCreate: autoCreate, conditions: .none)
            completions.append {
                done(
                    result.flatMap { appended in
                        guard case .stored(let event) = appended else { return .failure(.invalidConfig("a plain append has no duplicate")) }
                        return .success(event)
                    })
            }
        case .appendToSink(let name, let payload, let conditions, let sink, let token):
            let result = try appendResult(payload, to: name, autoCreate: autoCreate, conditions: conditions)
            sinks.add(sink, AppendResult(token: token, sequence: result.map(\.sequence)))
        case .atomic(let events, let sink, let token):
            sinks.add(sink, try appendAtomically(events, token: token))
        case .streamWrite(let write, let done):
            streamWrites.append(StreamWriteAnswer(done: done, result: try perform(write)))
        case .openConsumer(let name, let consumer, let first, let done):
            complete(done, try openConsumer(consumer, of: name, first: first))
        case .acknowledge(let name, let consumer, let sequence, let done):
            complete(done, try acknowledge(sequence, consumer: consumer, of: name))
        case .deleteConsumer(let name, let consumer, let done):
            complete(done, try deleteConsumer(consumer, of: name))
        case .group(let name, let deadLetter, let request):
            try perform(request, stream: name, deadLetter: deadLetter)
        case .create(let name, let config, let done):
            complete(done, try create(name, config))
        case .delete(let name, let done):
            complete(done, try deleteByRequest(name))
        case .terminate(let name, let terminal, let done):
            complete(done, try terminate(name, terminal))
        case .reset(let name, let keepHistory, let done):
            complete(done, try reset(name, keepHistory: keepHistory))
        case .expireEvents(let done):
            complete(done, .success(try expireEvents()))
        case .removeCompacted(let name, let runs, let finishesPass, let done):
            complete(done, try removeCompacted(name, runs: runs, finishesPass: finishesPass))
        case .removeEvents(let name, let from, let through, let done):
            guard let index = try touch(name) else { return complete(done, .failure(.unknownStream(name))) }
            try Retention.remove(from...through, from: &streams[index].record, db)
            complete(done, .success(streams[index].record.info))
        case .barrier(let done):
            complete(done, .success(()))
        case .refresh(let names, let bounds):
            try refresh(names, bounds: bounds)
        case .serveDueWaiters:
            servesDueWaiters = true
        case .enforceRetention(let done):
            try enforceRetention()
            complete(done, .success(()))
        case .subscription(let write, let done):
            complete(done, .success(try db.writeSubscription(write, millis: millis)))
        case .signingKey(let candidate, let done):
            complete(done, .success(try db.signingKey(orInsert: candidate, createdAt: millis)))
        case .defineDerivation(let definition, let done):
            complete(done, try define(definition))
        case .derivationStep(let step, let done):
            complete(done, try perform(step))
        case .schedule(let request, let done):
            complete(done, try schedule(request))
        case .unschedule(let name, let id, let done):
            complete(done, try unschedule(id, of: name))
        case .sourceTick(let name, let tick, let done):
            guard let index = try touch(name) else { return complete(done, .failure(.unknownStream(name))) }
            complete(done, .success(try db.advanceSourceTick(stream: streams[index].record.id, to: tick)))
        case .appendDueEvents:
            // Once per batch: a second request queued behind the first finds nothing more.
            if drainedSchedule == nil { try appendDueEvents() }
        }
    }

    /// A request's answer, given once the transaction has committed.
    private mutating func complete<T: Sendable>(_ done: @escaping WriteRequest.Completion<T>, _ result: Result<T, StoreError>) {
        completions.append { done(result) }
    }

    /// Trims every touched stream to its retention, serves the group members waiting for
    /// work (what retention removed from a group frees room too), and writes the rows.
    mutating func finish() throws {
        // The streams changed that still exist (a deleted one's copy is unreachable by name).
        for index in indexByName.values {
            try Retention(now: time).trim(&streams[index].record, db)
            trimGroups(index)
        }
        try serveWaiting()
        try settleScheduled()
        for index in indexByName.values {
            let record = streams[index].record
            if DB.writesEveryTouchedRow || streams[index].rowChanged { try db.updateStream(record) }
            for name in streams[index].consumersWritten {
                guard let consumer = record.consumers[name] else { continue }
                try db.writeConsumer(stream: record.id, consumer)
            }
            for name in streams[index].consumersRemoved {
                try db.deleteConsumer(stream: record.id, name: name)
            }
            try writeGroups(streams[index])
        }
        // A stream deleted in this batch took its producers with it (ON DELETE CASCADE):
        // their rows written now would name a stream that is gone, and fail the batch.
        let producers = deletedIDs.isEmpty ? producerChanges : producerChanges.filter { !deletedIDs.contains($0.key.stream) }
        try db.writeProducers(producers, millis: millis)
        try writeDerivations()
        alarmChange = try scheduleAlarmChange()
    }

    /// What retention removed leaves the stream's groups' pending sets.
    private mutating func trimGroups(_ index: Int) {
        let first = streams[index].record.info.firstSequence
        for (name, group) in streams[index].record.groups where (group.pending.keys.min() ?? .max) < first {
            streams[index].record.groups[name]?.trim(before: first)
            streams[index].groupsWritten.insert(name)
        }
    }

    /// The groups a stream's requests (or its retention) changed: each one's row, and its
    /// pending events that differ from what the transaction found.
    private func writeGroups(_ touched: Touched) throws {
        let id = touched.record.id
        for name in touched.groupsRemoved where touched.record.groups[name] == nil {
            try db.deleteGroup(stream: id, name: name)
        }
        for name in touched.groupsWritten {
            guard let group = touched.record.groups[name] else { continue }
            try db.writeGroup(stream: id, group, before: touched.groupsBefore[name]?.pending ?? [:])
        }
    }

    /// After the database committed: metrics, the catalog, listeners, then the requests.
    func committed(_ batch: [WriteRequest], started: ContinuousClock.Instant, listeners: CommitListeners) {
        StoreMetrics.commitDuration.record(duration: ContinuousClock.now - started)
        StoreMetrics.commits.increment()
        StoreMetrics.batchSize.record(batch.count)
        StoreMetrics.eventsPublished.increment(by: appendedEvents)
        StoreMetrics.bytesPublished.increment(by: appendedBytes)
        if appendedDueEvents > 0 { StoreMetrics.scheduledAppended.increment(by: appendedDueEvents) }
        if droppedDueEvents > 0 { StoreMetrics.scheduledDropped.increment(by: droppedDueEvents) }
        if expiredEvents > 0 { StoreMetrics.eventsExpired.increment(by: expiredEvents) }
        if compactedEvents > 0 { StoreMetrics.eventsCompacted.increment(by: compactedEvents) }
        catalog.apply(changedRecords)
        listeners.notify(commitBatch)
        sinks.deliver()
        waiting.settle(answered: answeredWaiters, waiting: retriedWaiters + newWaiters)
        if let alarmChange { alarm.settle(alarmChange) }
        for write in streamWrites { write.done(write.result) }
        for completion in completions { completion() }
    }

    /// A stream write's completion and its result, told once the batch committed. A struct,
    /// not a tuple: an array holds a tuple's closure in its most general form, so storing
    /// one and calling it each allocated a thunk, two allocations per HTTP append.
    struct StreamWriteAnswer {
        let done: WriteRequest.Completion<StreamWriteOutcome>
        let result: Result<StreamWriteOutcome, StoreError>
    }

    /// When the transaction failed: every request fails with the same error, and members
    /// that stopped waiting are answered with it.
    static func failed(_ batch: [WriteRequest], _ failure: StoreError, waiting: WaitingMembers) {
        StoreMetrics.failedCommits.increment()
        var sinks = SinkResults()
        for request in batch {
            if case .group(_, _, .stopWaiting(let ticket)) = request { waiting.fail(ticket, failure) }
            request.fail(failure, sinks: &sinks)
        }
        sinks.deliver()
    }

    /// The streams this batch wrote or deleted itself, which other daemons are told of. Not
    /// the ones it only learned of by a refresh: those were told by the daemon that wrote
    /// them. A stream both refreshed and written in one batch is written, and is told.
    var announced: Set<String> {
        deleted.union(indexByName.keys)
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
