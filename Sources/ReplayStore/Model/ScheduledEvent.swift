import Foundation
import ReplayModel

/// An event waiting for its time (`EventStore.schedule`): stored, acknowledged, and
/// appended to its stream when it falls due (`WriterRules.appendDueEvents`).
public struct ScheduledEvent: Sendable, Equatable {
    /// Its id among every stream's scheduled events, never given again.
    public let id: Int64
    public let stream: String
    /// When it falls due, and when it was scheduled: ms since 1970.
    public let due: Int64
    public let created: Int64
    public let key: EventKey?
    public let traceParent: TraceParent?
    /// How long it lives once appended; `nil`: its stream's default then.
    public let ttl: EventTTL?
    public let payload: Data

    public init(
        id: Int64, stream: String, due: Int64, created: Int64, key: EventKey?, traceParent: TraceParent?, ttl: EventTTL? = nil, payload: Data
    ) {
        self.ttl = ttl
        self.id = id
        self.stream = stream
        self.due = due
        self.created = created
        self.key = key
        self.traceParent = traceParent
        self.payload = payload
    }
}
