import Dispatch
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
/// database other daemons share it also looks at least every `poll` for other daemons'
/// events (one that scheduled them may have stopped): a read of the table's earliest due
/// time (`peek`), not a writer's batch, so that an idle daemon writes nothing and its
/// publishes keep their unlocked batches; the writer is asked only when one is due.
final class ScheduledAlarm: Sendable {
    enum Change: Sendable {
        /// A new event falls due at this time: ring no later.
        case noLaterThan(Int64)
        /// The table's earliest due time after a drain (`nil`: none pending).
        case next(Int64?)
        /// A drain left more due events: ring again at once.
        case dueNow
    }

    /// On a shared database: how often to look, and how.
    struct Poll: Sendable {
        let millis: Int64
        /// The table's earliest due time, read outside the writer (blocking).
        let peek: @Sendable () throws -> Int64?
    }

    private struct State {
        /// The armed wake-up: when, whether it only looks (`peek`) or drains, and its work.
        var armed: (at: Int64, looks: Bool, work: DispatchWorkItem)?
        var writer: WriteQueue?
        var closed = false
    }

    private let state = Locked(State())
    private let now: @Sendable () -> Date
    private let poll: Poll?
    /// Where it waits and peeks: a read of the database may block, so not a task.
    private let queue = DispatchQueue(label: "replay.store.scheduled-alarm")

    init(now: @escaping @Sendable () -> Date, poll: Poll? = nil) {
        self.now = now
        self.poll = poll
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
                if let armed = state.armed, armed.at <= due, !armed.looks { return nil }
                arm(at: due, looks: false, &state)
            case .next(let due):
                armForNext(due, &state)
            case .dueNow:
                state.armed?.work.cancel()
                state.armed = nil
                return state.writer
            }
            return nil
        }
        ringNow?.submit(.appendDueEvents)
    }

    /// Armed for `due`, or to look sooner (a shared database), or not at all.
    private func armForNext(_ due: Int64?, _ state: inout State) {
        let look = poll.map { Timestamp.millis(now()) + $0.millis }
        if let due, due <= look ?? .max { return arm(at: due, looks: false, &state) }
        if let look { return arm(at: look, looks: true, &state) }
        state.armed?.work.cancel()
        state.armed = nil
    }

    /// Replaces the armed wake-up by one at `at` (ms since 1970, by the store's clock).
    private func arm(at: Int64, looks: Bool, _ state: inout State) {
        state.armed?.work.cancel()
        let delay = max(0, at - Timestamp.millis(now()))
        var fire: DispatchWorkItem?
        let work = DispatchWorkItem { [self] in
            guard let fire else { return }
            rang(fire, looks: looks)
        }
        fire = work
        state.armed = (at, looks, work)
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(clamping: delay)), execute: work)
    }

    /// The wake-up `work` came: asks the writer, or first looks whether anything is due.
    private func rang(_ work: DispatchWorkItem, looks: Bool) {
        let current = state.withLock { state -> Bool in
            guard state.armed?.work === work else { return false }
            state.armed = nil
            return true
        }
        guard current else { return }
        if looks, let poll {
            let due: Int64?
            do { due = try poll.peek() } catch { due = nil }
            if due.map({ $0 > Timestamp.millis(now()) }) ?? true {
                return state.withLock { state in
                    guard !state.closed, state.armed == nil else { return }
                    armForNext(due, &state)
                }
            }
        }
        state.withLock { $0.writer }?.submit(.appendDueEvents)
    }

    func close() {
        state.withLock { state in
            state.closed = true
            state.armed?.work.cancel()
            state.armed = nil
        }
    }
}
