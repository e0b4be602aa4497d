import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol

/// Scheduled events: published now, stored as durably as any event, and appended to the
/// stream (with its next sequence number) when their time comes.
extension ReplayClient {
    /// Schedules one event; answers once the daemon has stored it, with its id (for
    /// `unschedule`) and due time.
    ///
    /// ```swift
    /// let reminder = try await client.schedule("jobs", #"{"send":"invoice"}"#, at: .after(seconds: 30))
    /// try await client.unschedule("jobs", id: reminder.id)
    /// ```
    @discardableResult
    public func schedule(
        _ stream: String, _ payload: Data, at due: DueTime, key: EventKey? = nil, traceParent: TraceParent? = nil
    ) async throws -> ScheduledDescription {
        let command = ClientCommand.schedule(
            stream: stream, payload: ByteBuffer(bytes: payload), due: due, annotations: AppendConditions(traceParent: traceParent, key: key))
        return try await decode(try await send([command])[0])
    }

    /// Schedules many events in one pipelined write, all for `due`; their descriptions in
    /// order, or the first refusal (the events before it are scheduled).
    public func schedule(
        _ stream: String, contentsOf payloads: [Data], at due: DueTime, key: EventKey? = nil, ttl: EventTTL? = nil
    ) async throws -> [ScheduledDescription] {
        let annotations = AppendConditions(key: key, ttl: ttl)
        let replies = try await send(
            payloads.map { ClientCommand.schedule(stream: stream, payload: ByteBuffer(bytes: $0), due: due, annotations: annotations) })
        var described: [ScheduledDescription] = []
        for reply in replies { described.append(try await decode(reply)) }
        return described
    }

    @discardableResult
    public func schedule(_ stream: String, _ text: String, at due: DueTime, key: EventKey? = nil) async throws -> ScheduledDescription {
        try await schedule(stream, Data(text.utf8), at: due, key: key)
    }

    /// The stream's pending scheduled events, earliest due first, with their payloads.
    public func scheduled(_ stream: String, limit: Int = 100) async throws -> [ScheduledDescription] {
        try await decode(try await send([.scheduled(stream: stream, limit: limit)])[0])
    }

    /// Cancels a pending scheduled event; the server's `unknown_scheduled` if it was
    /// already appended or cancelled.
    public func unschedule(_ stream: String, id: Int64) async throws {
        try await expectOK(.unschedule(stream: stream, id: id))
    }
}
