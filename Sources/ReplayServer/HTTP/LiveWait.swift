import NIOCore
import NIOPosix
import ReplaySync
import ServiceLifecycle

/// How a live read's wait ended.
enum LiveWait: Sendable {
    case committed
    case timedOut
    /// The daemon is shutting down: end the response now rather than hold the shutdown.
    case shuttingDown

    /// Waits for a commit after the cursor's position, at most `timeout`.
    static func wait(_ cursor: HTTPCursor, timeout: Duration) async -> LiveWait {
        let (hub, after) = cursor.watched
        return await wait(on: hub, after: after, timeout: timeout)
    }

    /// Waits for a commit of `hub` after `sequence`, at most `timeout`, ending early when
    /// the daemon shuts down or the task is cancelled.
    ///
    /// One continuation, resumed by whichever comes first: the hub's wake-up, a timer on an
    /// event loop, the shutdown handler. No child task: a parked SSE reader is held by the
    /// thousand, and a task group of three (the commit, a sleep, the shutdown) cost each
    /// one three tasks of its own, about 5 KB, for as long as it was parked.
    static func wait(on hub: StreamHub, after sequence: UInt64, timeout: Duration) async -> LiveWait {
        let race = Race()
        return await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    race.start(continuation, hub: hub, after: sequence, timeout: timeout)
                }
            } onCancel: {
                race.finish(.timedOut)
            }
        } onGracefulShutdown: {
            race.finish(.shuttingDown)
        }
    }
}

/// One wait's outcome, decided once, by whichever of its wake-ups comes first; the others
/// are withdrawn.
private final class Race: Sendable {
    private struct State {
        var outcome: LiveWait?
        var continuation: CheckedContinuation<LiveWait, Never>?
        var timer: Scheduled<Void>?
        var ticket: (hub: StreamHub, id: UInt64)?
    }

    private let state = Locked(State())

    func start(_ continuation: CheckedContinuation<LiveWait, Never>, hub: StreamHub, after sequence: UInt64, timeout: Duration) {
        // Shutdown or cancellation may have come first.
        if let outcome = state.withLock({ state in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }) {
            return continuation.resume(returning: outcome)
        }
        let timer = MultiThreadedEventLoopGroup.singleton.next().scheduleTask(in: TimeAmount(timeout)) {
            self.finish(.timedOut)
        }
        let id = hub.onCommit(after: sequence) { self.finish(.committed) }
        let decided = state.withLock { state in
            if state.outcome == nil {
                state.timer = timer
                state.ticket = id.map { (hub, $0) }
            }
            return state.outcome != nil
        }
        if decided {
            timer.cancel()
            if let id { hub.stopWaiting(id) }
        }
    }

    func finish(_ outcome: LiveWait) {
        let taken = state.withLock { state -> State? in
            guard state.outcome == nil else { return nil }
            defer { state = State(outcome: outcome) }
            return state
        }
        guard let taken else { return }
        taken.timer?.cancel()
        if let ticket = taken.ticket { ticket.hub.stopWaiting(ticket.id) }
        taken.continuation?.resume(returning: outcome)
    }
}
