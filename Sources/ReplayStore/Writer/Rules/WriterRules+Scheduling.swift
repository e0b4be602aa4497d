import Foundation
import ReplayModel

/// Scheduled events: time as a table the writer drains. A scheduled event is a row of
/// `scheduled_events`, written in the batch that accepts it (so it is as durable as any
/// event when its publisher hears back); when it falls due, the batch that appends it to
/// its stream also deletes its row. Both in one transaction: after a crash at any moment
/// the event is either still pending or appended, once. On a shared database each daemon
/// takes due rows with `SKIP LOCKED`, so two daemons never append the same one.
extension WriterRules {
    /// How many due events one batch appends at most: a backlog (a daemon that was down)
    /// is drained a batch at a time, each a few milliseconds, so publishes queued behind
    /// one wait no longer than behind any other batch.
    static var dueEventsPerBatch: Int { 1_000 }

    /// Stores an event to append when it falls due, in a stream that must exist (or is
    /// created as an append would create it) and take appends.
    mutating func schedule(_ request: ScheduleRequest) throws -> Result<ScheduledEvent, StoreError> {
        let name = request.stream
        let index: Int
        if let existing = try touch(name) {
            if let refused = refusal(toAppendTo: existing) { return .failure(refused) }
            guard streams[existing].record.info.terminal == nil else { return .failure(.terminated(stream: name)) }
            index = existing
        } else {
            guard let autoCreate else { return .failure(.unknownStream(name)) }
            do throws(StoreError) { try admitNewStream(name, autoCreate) } catch { return .failure(error) }
            index = try insertStream(name, autoCreate)
        }
        let id = try db.insertScheduled(stream: streams[index].record.id, request, createdAt: millis)
        earliestScheduled = min(earliestScheduled ?? .max, request.due)
        streams[index].record.info.scheduledCount += 1
        streams[index].record.info.nextDue = min(streams[index].record.info.nextDue ?? .max, request.due)
        return .success(
            ScheduledEvent(
                id: id, stream: name, due: request.due, created: millis, key: request.key, traceParent: request.traceParent,
                ttl: request.ttl, payload: request.payload))
    }

    /// Cancels a pending scheduled event of the stream. (The alarm stays as it is: if it
    /// was armed for this event, it finds nothing due and is armed for the next.)
    mutating func unschedule(_ id: Int64, of name: String) throws -> Result<Void, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        guard try db.deleteScheduled(stream: streams[index].record.id, id: id) else { return .failure(.unknownScheduled(stream: name, id: id)) }
        scheduledTaken(from: index)
        return .success(())
    }

    /// Appends the events due by the batch's time, earliest first, each with its stream's
    /// next sequence number and the batch's time (never before its due time). One whose
    /// stream is gone, ended or derived since it was scheduled is dropped, and counted.
    mutating func appendDueEvents() throws {
        let due = try db.takeDueEvents(by: millis, limit: Self.dueEventsPerBatch, streams: DB.locksStreamsUpFront ? dueStreams : nil)
        for event in due {
            // A stream deleted since took its events' rows with it; only a soft-deleted
            // one (kept for its forks) still had them.
            guard let index = try touch(event.stream) else {
                droppedDueEvents += 1
                continue
            }
            scheduledTaken(from: index)
            guard refusal(toAppendTo: index) == nil, sequenceNumbersLeft(for: 1, in: index) == nil,
                try append(event.payload, to: index, trace: event.traceParent, key: event.key, ttl: event.ttl) != nil
            else {
                droppedDueEvents += 1
                continue
            }
            appendedDueEvents += 1
        }
        drainedSchedule = due.count == Self.dueEventsPerBatch ? .more : .drained
    }

    /// One of the stream's scheduled events left the table: its count goes down, and its
    /// next due time is read again before its row is written (`settleScheduled`).
    private mutating func scheduledTaken(from index: Int) {
        streams[index].record.info.scheduledCount = max(0, streams[index].record.info.scheduledCount - 1)
        scheduledLeft.insert(index)
    }

    /// The next due time of each stream whose scheduled events this batch took out: one
    /// index descent each.
    mutating func settleScheduled() throws {
        for index in scheduledLeft {
            let record = streams[index].record
            streams[index].record.info.nextDue = record.info.scheduledCount == 0 ? nil : try db.nextScheduledDue(of: record.id)
        }
    }

    /// What the alarm does once this batch committed: nothing, be armed no later than a
    /// new event's time, or be armed for the table's next due time (or at once, for a
    /// backlog that one batch did not finish).
    func scheduleAlarmChange() throws -> ScheduledAlarm.Change? {
        switch drainedSchedule {
        case .more: return .dueNow
        case .drained: return .next(try db.nextScheduledDue())
        case nil: return earliestScheduled.map { .noLaterThan($0) }
        }
    }
}
