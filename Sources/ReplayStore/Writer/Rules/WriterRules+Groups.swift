import Foundation
import ReplayModel

/// Consumer groups: part of their stream's record like durable consumers, changed as
/// working copies (`ConsumerGroup`'s transitions, at the batch's time) and written in
/// `finish` with the stream's row: the group's row and the pending events that changed.
/// Dead letters are appended to their stream in the same transaction as their removal
/// from the group.
extension WriterRules {
    mutating func perform(_ request: GroupRequest, stream name: String, deadLetter: String?) throws {
        switch request {
        case .join(let group, let asked, let first, let done):
            let result = try join(group, of: name, asked: asked, first: first)
            completions.append { done(result) }
        case .handOut(let group, let member, let limit, let config, let ticket, let reader, let done):
            guard let ticket else {
                let result = try handOut(group, of: name, to: member, limit: limit, deadLetterConfig: config, reader: reader)
                return completions.append { done(result) }
            }
            let waiter = WaitingMembers.Waiter(
                .init(
                    ticket: ticket, stream: name, group: group, member: member, limit: limit, deadLetter: deadLetter, deadLetterConfig: config,
                    reader: reader, done: done))
            try handOutOrWait(waiter)
        case .stopWaiting(let ticket):
            stopWaiting(ticket)
        case .acknowledge(let group, let member, let sequences, let done):
            let result = try changeGroup(group, of: name) { group -> Result<[Result<Void, StoreError>], StoreError> in
                .success(sequences.map { sequence in group.acknowledge(sequence, by: member).mapError { Self.ackRefusal($0, sequence, member, "ACK") } })
            }
            completions.append { done(result) }
        case .giveBack(let group, let member, let sequence, let delay, let config, let done):
            let result = try giveBack(sequence, group, of: name, by: member, delayMillis: delay, deadLetterConfig: config)
            completions.append { done(result) }
        case .leave(let group, let member, let done):
            let time = millis
            let result = try changeGroup(group, of: name) { group -> Result<Void, StoreError> in
                group.release(member, now: time)
                return .success(())
            }
            completions.append { done(result) }
        case .delete(let group, let done):
            let result = try deleteGroup(group, of: name)
            completions.append { done(result) }
        }
    }

    private mutating func join(
        _ group: String, of name: String, asked: GroupSettings.Asked, first: FirstPosition
    ) throws -> Result<GroupJoined, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        if let existing = streams[index].record.groups[group] {
            if let conflict = existing.settings.conflict(with: asked) {
                return .failure(.groupConflict(stream: name, group: group, setting: conflict.setting, current: conflict.current, asked: conflict.asked))
            }
            return .success(GroupJoined(settings: existing.settings, created: false))
        }
        if asked.deadLetter == name {
            return .failure(.invalidConfig("a group's dead_letter stream cannot be the stream it reads ('\(name)')"))
        }
        let info = streams[index].record.info
        let delivered = min(info.lastSequence, max(try resolve(first, of: streams[index].record), 1) - 1)
        let settings = asked.settings
        streams[index].record.groups[group] = ConsumerGroup(name: group, settings: settings, deliveredSequence: delivered, createdAt: millis)
        streams[index].groupsWritten.insert(group)
        return .success(GroupJoined(settings: settings, created: true))
    }

    mutating func handOut(
        _ group: String, of name: String, to member: String, limit: Int, deadLetterConfig: StreamConfig, reader: HandoutReader?
    ) throws -> Result<GroupHandout, StoreError> {
        if let index = indexByName[name], !streams[index].record.info.isSoftDeleted {
            // Already brought into this batch: decided in place, with no copy of the group.
            guard streams[index].record.groups[group] != nil else { return .failure(.unknownGroup(stream: name, name: group)) }
            let (first, last) = (streams[index].record.info.firstSequence, streams[index].record.info.lastSequence)
            let handout = streams[index].record.groups[group]!.handOut(
                to: member, limit: limit, now: millis, firstSequence: first, lastSequence: last)
            return try handedOut(handout, group, of: index, to: member, deadLetterConfig: deadLetterConfig, reader: reader)
        }
        guard let record = try record(name), !record.info.isSoftDeleted else { return .failure(.unknownStream(name)) }
        guard var working = record.groups[group] else { return .failure(.unknownGroup(stream: name, name: group)) }
        let info = record.info
        let handout = working.handOut(to: member, limit: limit, now: millis, firstSequence: info.firstSequence, lastSequence: info.lastSequence)
        // A hand-out that gives nothing changes nothing, and does not touch the stream: its
        // commit then wakes no member (each asks again only when the stream changed since
        // it asked, see `GroupMember`), so idle members cost no writes.
        guard !handout.given.isEmpty || !handout.deadLetters.isEmpty || handout.skipped != nil else {
            return .success(
                GroupHandout(
                    given: [], held: working.held(by: member, now: millis), skipped: nil, nextDue: working.nextDue,
                    finished: Self.isFinished(working, info)))
        }
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        streams[index].record.groups[group] = working
        return try handedOut(handout, group, of: index, to: member, deadLetterConfig: deadLetterConfig, reader: reader)
    }

    /// After a hand-out decided on the working copy: the dead letters it made, and its answer.
    private mutating func handedOut(
        _ handout: ConsumerGroup.Handout, _ group: String, of index: Int, to member: String, deadLetterConfig: StreamConfig,
        reader: HandoutReader?
    ) throws -> Result<GroupHandout, StoreError> {
        if !handout.given.isEmpty || !handout.deadLetters.isEmpty || handout.skipped != nil { streams[index].groupsWritten.insert(group) }
        for (sequence, delivery) in handout.deadLetters {
            try deadLetter(sequence, delivery, of: index, group: streams[index].record.groups[group]!, config: deadLetterConfig)
        }
        let working = streams[index].record.groups[group]!
        var answer = GroupHandout(
            given: handout.given, held: working.held(by: member, now: millis), skipped: handout.skipped, nextDue: working.nextDue,
            finished: Self.isFinished(working, streams[index].record.info))
        if let reader, DB.readsInPlace, !handout.given.isEmpty {
            answer.read = try read(handout.given.map(\.sequence), of: streams[index].record, into: reader)
        }
        return .success(answer)
    }

    /// Gives `reader` the events of `sequences` (ascending), a run of consecutive numbers at
    /// a time, up to its byte budget: how many of them, from the first, it was given. It
    /// stops at the first one missing, which its member then reads as a gap.
    private func read(_ sequences: [UInt64], of record: Catalog.Record, into reader: HandoutReader) throws -> Int {
        var read = 0
        var bytes = 0
        for run in sequences.consecutiveRuns {
            guard bytes < reader.byteBudget else { break }
            var expected = run.lowerBound
            let segments = LogSegments(of: record, from: run.lowerBound, through: run.upperBound) { catalog[$0] }
            try forEachIntactEvent(segments, limit: run.count, byteBudget: reader.byteBudget - bytes) { sequence, time, payload, trace, hash, key in
                guard sequence == expected else { return }
                reader.take(sequence, time, payload, trace, hash, key)
                expected += 1
                bytes += payload.count
            }
            read += Int(expected - run.lowerBound)
            guard expected > run.upperBound else { return read }
        }
        return read
    }

    /// The stream ended, and everything in it was handed out and acknowledged.
    private static func isFinished(_ group: ConsumerGroup, _ info: StreamInfo) -> Bool {
        info.terminal != nil && group.pending.isEmpty && group.deliveredSequence >= info.lastSequence
    }

    private mutating func giveBack(
        _ sequence: UInt64, _ group: String, of name: String, by member: String, delayMillis: Int64, deadLetterConfig: StreamConfig
    ) throws -> Result<Void, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        guard streams[index].record.groups[group] != nil else { return .failure(.unknownGroup(stream: name, name: group)) }
        // In place: a refused NACK changes nothing, so there is nothing to undo.
        switch streams[index].record.groups[group]!.giveBack(sequence, by: member, delayMillis: delayMillis, now: millis) {
        case .failure(let refusal):
            return .failure(Self.ackRefusal(refusal, sequence, member, "NACK"))
        case .success(let release):
            streams[index].groupsWritten.insert(group)
            if case .deadLetter(let delivery) = release {
                try deadLetter(sequence, delivery, of: index, group: streams[index].record.groups[group]!, config: deadLetterConfig)
            }
            return .success(())
        }
    }

    /// One change of an existing group, made in place (copying a group per ACK was the
    /// largest share of the writer's time with a few hundred events pending): `change`
    /// leaves the group as it was when it fails.
    private mutating func changeGroup<T>(
        _ group: String, of name: String, _ change: (inout ConsumerGroup) -> Result<T, StoreError>
    ) throws -> Result<T, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        // Through the dictionary's slot, not a copy of the group read out to test it.
        guard let result = streams[index].record.groups[group].changeIfPresent(change) else {
            return .failure(.unknownGroup(stream: name, name: group))
        }
        if case .success = result { streams[index].groupsWritten.insert(group) }
        return result
    }

    private mutating func deleteGroup(_ group: String, of name: String) throws -> Result<Void, StoreError> {
        guard let index = try touch(name), streams[index].record.groups.removeValue(forKey: group) != nil else {
            return .failure(.unknownGroup(stream: name, name: group))
        }
        streams[index].groupsWritten.remove(group)
        streams[index].groupsRemoved.insert(group)
        return .success(())
    }

    static func ackRefusal(_ refusal: ConsumerGroup.Refusal, _ sequence: UInt64, _ member: String, _ verb: String) -> StoreError {
        switch refusal {
        case .notPending:
            .invalidAck("\(verb) \(sequence): event \(sequence) is not pending in this group (acknowledged already, never handed out, or trimmed)")
        case .heldByAnother(let holder?):
            .invalidAck(
                "\(verb) \(sequence): member '\(member)' does not hold event \(sequence); '\(holder)' does (its time ran out and it was handed out again)"
            )
        case .heldByAnother(nil):
            .invalidAck("\(verb) \(sequence): member '\(member)' no longer holds event \(sequence); its time ran out and it waits to be handed out again")
        }
    }

    /// Appends the event's payload, unchanged, to the group's dead-letter stream, and
    /// records where it came from. An event retention already removed has nothing to
    /// copy: it only leaves the group.
    private mutating func deadLetter(
        _ sequence: UInt64, _ delivery: PendingDelivery, of index: Int, group: ConsumerGroup, config: StreamConfig
    ) throws {
        guard let target = group.settings.deadLetter else { return }
        let record = streams[index].record
        var payload: Data?
        var trace: TraceParent?
        var key: EventKey?
        let segments = LogSegments(of: record, from: sequence, through: sequence) { catalog[$0] }
        try forEachIntactEvent(segments, limit: 1, byteBudget: .max) { _, _, bytes, traceBytes, _, keyBytes in
            payload = Data(bytes)
            trace = traceBytes.flatMap(TraceParent.init(bytes:))
            key = keyBytes.flatMap(EventKey.init(bytes:))
        }
        guard let payload else { return }
        // The dead-letter stream is created on first use with the daemon's defaults; the
        // copy keeps the event's key and trace context, so whoever looks into it finds what
        // the event was about and its trace.
        switch try appendResult(payload, to: target, autoCreate: config, conditions: AppendConditions(traceParent: trace, key: key)) {
        case .success(let appended):
            try db.insertDeadLetter(
                DeadLetter(
                    stream: target, sequence: appended.sequence, origin: record.info.name, originSequence: sequence, group: group.name,
                    deliveries: delivery.deliveries, lastMember: delivery.lastMember, time: millis))
        case .failure:
            // The dead-letter stream refuses it (it was completed or failed): the event
            // leaves the group as it would without one, counted as dead-lettered.
            break
        }
    }
}

extension Optional {
    /// `change`'s result on the wrapped value, changed in place; `nil` if there is none.
    fileprivate mutating func changeIfPresent<T>(_ change: (inout Wrapped) -> T) -> T? {
        guard case .some = self else { return nil }
        return change(&self!)
    }
}
