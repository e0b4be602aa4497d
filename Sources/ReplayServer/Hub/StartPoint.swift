import ReplayProtocol
import ReplayStore

/// Where a new subscription begins: `next`, the first sequence number it wants, and
/// `liveAfter`, the stream's last sequence number when it subscribed. Events up to
/// `liveAfter` are history, replayed only while retained; later ones are live.
/// `snapshot`: before `next` (then `liveAfter + 1`), the current event of every key up to
/// `liveAfter` (`SUB … snapshot`).
struct StartPoint: Sendable, Equatable {
    var next: UInt64
    var liveAfter: UInt64
    var snapshot = false
}

extension StartPosition {
    /// The first sequence number this start wants in a stream as `info` describes it;
    /// `nil` for `since`, which needs the store to find it.
    func next(in info: StreamInfo) -> UInt64? {
        switch self {
        case .all: info.firstSequence
        case .new: info.lastSequence + 1
        case .from(let sequence): max(1, sequence)
        case .last(let count): info.firstSequence(ofLast: count)
        case .since: nil
        case .snapshot: info.lastSequence + 1
        }
    }
}
