import Foundation
import ReplayModel
import ReplaySync

/// The one timer of the scheduled events: armed for the earliest due time the writer
/// knows, it asks the writer to append what is due (`WriteRequest.appendDueEvents`). The
/// due times themselves stay in the database, so a million pending events cost the
/// daemon one timer, not a million.
///
/// The writer tells it, after each commit that scheduled or drained (`Change`), when to
/// ring next. It rings once at start, for what fell due while the daemon was down. On a
/// database other daemons share it also rings at least every `pollMillis`: another
/// daemon's events (one that scheduled them may have stopped) are found within that.
final class ScheduledAlarm: Sendable {
    enum Change: Sendable {
        /// A new event falls due at this time: ring no later.
        case noLaterThan(Int64)
        /// The table's earliest due time after a drain (`nil`: none pending).
        case next(Int64?)
        /// A drain left more due events: ring again at once.
        case dueNow
    }

    private struct State {
        var armed: (id: UInt64, at: Int64, task: Task<Void, Never>)?
        var count: UInt64 = 0
        var writer: WriteQueue?
        var closed = false
    }

    private let state = Locked(State())
    private let now: @Sendable () -> Date
    private let pollMillis: Int64?

    init(now: @escaping @Sendable () -> Date, pollMillis: Int64? = nil) {
        self.now = now
        self.pollMillis = pollMillis
    }

    /// The writer to ask; the first drain runs at once.
    func start(writer: WriteQueue) {
        state.withLock { $0.writer = writer }
        writer.submit(.appendDueEvents)
    }

    func settle(_ change: Change) {
        let ringNow = state.withLock { state -> WriteQueue? in
            guard !state.closed else { return nil }
            switch change {
            case .noLaterThan(let due):
                if let armed = state.armed, armed.at <= due { return nil }
                arm(at: due, &state)
            case .next(let due):
                let poll = pollMillis.map { Timestamp.millis(now()) + $0 }
                guard let at = [due, poll].compactMap({ $0 }).min() else {
                    state.armed?.task.cancel()
                    state.armed = nil
                    return nil
                }
                arm(at: at, &state)
            case .dueNow:
                state.armed?.task.cancel()
                state.armed = nil
                return state.writer
            }
            return nil
        }
        ringNow?.submit(.appendDueEvents)
    }

    /// Replaces the armed timer by one for `at` (ms since 1970, by the store's clock).
    private func arm(at: Int64, _ state: inout State) {
        state.armed?.task.cancel()
        state.count &+= 1
        let id = state.count
        let delay = Duration.milliseconds(max(0, at - Timestamp.millis(now())))
        let lock = self.state
        let task = Task.detached {
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            let writer = lock.withLock { state -> WriteQueue? in
                guard state.armed?.id == id else { return nil }
                state.armed = nil
                return state.writer
            }
            writer?.submit(.appendDueEvents)
        }
        state.armed = (id, at, task)
    }

    func close() {
        state.withLock { state in
            state.closed = true
            state.armed?.task.cancel()
            state.armed = nil
        }
    }
}
