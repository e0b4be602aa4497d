import ReplaySync

/// Where one subscription stands, for the daemon's state dump (SIGUSR1): a subscription
/// that was acknowledged but never delivered shows which step it is stuck in.
final class SubscriptionPhase: Sendable {
    enum Phase: Sendable, CustomStringConvertible {
        /// Its start position is being decided (a `since` lookup, a stream being created).
        case resolving
        /// `+OK` is queued; the cursor starts once it has been written.
        case awaitingOKWritten
        /// Moving its cursor: sending from the ring or reading pages.
        case delivering
        /// Caught up, parked in the hub until a commit after `after`.
        case parked(after: UInt64)
        /// A windowed subscription that sent its window: waiting for the client's MORE.
        case waitingForCredit(after: UInt64)
        /// Ended: delivered the stream's end, cancelled, or failed to start.
        case finished

        var description: String {
            switch self {
            case .resolving: "resolving its start"
            case .awaitingOKWritten: "waiting for its +OK to be written"
            case .delivering: "delivering"
            case .parked(let after): "parked after \(after)"
            case .waitingForCredit(let after): "waiting for MORE after \(after)"
            case .finished: "finished"
            }
        }
    }

    let stream: String
    private let phase = Locked(Phase.resolving)

    init(stream: String) {
        self.stream = stream
    }

    var current: Phase { phase.withLock { $0 } }

    func enter(_ next: Phase) {
        phase.withLock { $0 = next }
    }
}
