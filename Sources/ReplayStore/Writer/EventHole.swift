import ReplayModel

/// Events removed from inside a stream's retained window, `from...through` (by their
/// expiry), where retention only removes the oldest. A hole keeps the chain
/// link of its last event: the event after it was hashed from that link, so the chain is
/// still checked across the hole, and a row removed without a hole (by hand) still breaks
/// it. Holes side by side are one hole, so a stream has at most one per event it keeps.
///
/// Readers stop at a hole (the store's reads end before it) and report it as the gap it
/// is; the stream's count of events leaves it out (`StreamInfo.removedEvents`).
struct EventHole: Equatable, Sendable {
    let from: UInt64
    let through: UInt64
    /// The chain link of event `through`.
    let hash: EventHash

    var events: Int { Int(through - from + 1) }

    /// The one hole that the rows just removed (`first` through `last`, the last's link
    /// with it) make with the holes inside or beside them (`neighbours`).
    static func merging(first: UInt64, last: (sequence: UInt64, hash: EventHash), neighbours: [EventHole]) -> EventHole {
        var lower = first
        var upper = last
        for hole in neighbours {
            lower = min(lower, hole.from)
            if hole.through > upper.sequence { upper = (hole.through, hole.hash) }
        }
        return EventHole(from: lower, through: upper.sequence, hash: upper.hash)
    }
}
