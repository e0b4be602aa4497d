import Foundation
import ReplayModel

/// Scheduled events: stored now, appended to their stream when they fall due (see
/// `WriterRules+Scheduling`).
extension EventStore {
    /// Stores `payload` to be appended to `stream` when `due` comes (a delay counts from
    /// now, by the store's clock; a time already past falls due at once); completes once
    /// the event is committed, as durable as any append. The stream must exist (or is
    /// created as an append creates it) and take appends: not ended, not derived.
    public func schedule(
        _ payload: Data, to stream: String, at due: DueTime, key: EventKey? = nil, traceParent: TraceParent? = nil, ttl: EventTTL? = nil,
        completion: @escaping @Sendable (Result<ScheduledEvent, StoreError>) -> Void
    ) {
        guard let due = due.millis(now: Timestamp.millis(clock())) else {
            return completion(.failure(.invalidConfig("an event is scheduled at most a year ahead")))
        }
        let request = ScheduleRequest(stream: stream, payload: payload, due: due, key: key, traceParent: traceParent, ttl: ttl)
        writer.submit(.schedule(request, completion))
    }

    public func schedule(
        _ payload: Data, to stream: String, at due: DueTime, key: EventKey? = nil, traceParent: TraceParent? = nil, ttl: EventTTL? = nil
    ) async throws(StoreError) -> ScheduledEvent {
        try await bridge { schedule(payload, to: stream, at: due, key: key, traceParent: traceParent, ttl: ttl, completion: $0) }
    }

    /// Cancels a pending scheduled event of `stream`: `.unknownScheduled` if it was
    /// already appended, cancelled, or is another stream's.
    public func unschedule(_ id: Int64, of stream: String, completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        writer.submit(.unschedule(stream: stream, id: id, completion))
    }

    public func unschedule(_ id: Int64, of stream: String) async throws(StoreError) {
        try await bridge { unschedule(id, of: stream, completion: $0) }
    }

    /// Appends what is due by the store's clock now, then completes. The store's own alarm
    /// does this at each due time; this is for a clock that is moved by hand (tests, on
    /// virtual time).
    public func appendDueEvents() async throws(StoreError) {
        writer.submit(.appendDueEvents)
        try await barrier()
    }

    /// The stream's pending scheduled events, earliest due first, up to `limit`. Blocking.
    public func scheduled(_ stream: String, limit: Int) throws(StoreError) -> [ScheduledEvent] {
        guard let record = catalog[stream], !record.info.isSoftDeleted else { throw .unknownStream(stream) }
        return try log.scheduledEvents(of: record.id, name: stream, limit: limit)
    }
}

/// Scheduled sources' ticks: the one record, in the database, of which tick ran.
extension EventStore {
    /// Claims a scheduled source's tick (ms since 1970): `true` once the stream's last tick
    /// is moved to it, and this daemon is to run it; `false` if it, or a later one, was
    /// claimed already (here or by another daemon sharing the database).
    public func claimSourceTick(_ stream: String, tick: Int64, completion: @escaping @Sendable (Result<Bool, StoreError>) -> Void) {
        writer.submit(.sourceTick(stream: stream, tick: tick, completion))
    }

    /// The last tick claimed for the stream's scheduled source, if any. Blocking.
    public func lastSourceTick(of stream: String) throws(StoreError) -> Int64? {
        guard let record = catalog[stream] else { throw .unknownStream(stream) }
        return try log.lastSourceTick(of: record.id)
    }
}
