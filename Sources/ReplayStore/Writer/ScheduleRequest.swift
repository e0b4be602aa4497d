import Foundation
import ReplayModel

/// An event to append when it falls due: what `WriteRequest.schedule` carries.
struct ScheduleRequest: Sendable {
    let stream: String
    let payload: Data
    /// ms since 1970.
    let due: Int64
    let key: EventKey?
    let traceParent: TraceParent?
    /// How long the event lives once appended; `nil`: its stream's default then.
    let ttl: EventTTL?
}
