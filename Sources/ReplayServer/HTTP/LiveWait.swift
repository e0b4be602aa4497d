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
    /// The reader's connection closed (`WaitInterrupt`): end the response, no one reads it.
    case connectionClosed

    /// Waits for a commit of the watched hub after its sequence (a cursor's `watched`), at
    /// most `timeout`, ending early when the daemon shuts down, the task is cancelled, or
    /// `interrupt` fires.
    ///
    /// One continuation, resumed by whichever comes first: the hub's wake-up, a timer on an
    /// event loop, the shutdown handler, the interrupt. No child task: a parked SSE reader
    /// is held by the thousand, and a task group of three (the commit, a sleep, the
    /// shutdown) cost each one three tasks of its own, about 5 KB, for as long as it was
    /// parked.
    static func wait(on watched: (hub: StreamHub, after: UInt64), timeout: Duration, interrupt: WaitInterrupt? = nil) async -> LiveWait {
        let race = Race()
        if let interrupt, !interrupt.attach(race) { return .connectionClosed }
        defer { interrupt?.detach(race) }
        return await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    race.start(continuation, hub: watched.hub, after: watched.after, timeout: timeout)
                }
            } onCancel: {
                race.finish(.timedOut)
            }
        } onGracefulShutdown: {
            race.finish(.shuttingDown)
        }
    }
}

/// Ends one reader's waits when its connection closes: fired once (from the channel's close,
/// on its event loop), it finishes the wait in progress, and any later wait at once. A
/// connection closed under a parked SSE reader would otherwise be found only at the
/// reader's next write, up to `--long-poll-timeout` later, its task and memory held
/// meanwhile. Registered once per reader, not per wait: a callback on the channel's close
/// cannot be withdrawn, and a reader waits thousands of times.
final class WaitInterrupt: Sendable {
    private struct State {
        var fired = false
        var race: Race?
    }

    private let state = Locked(State())

    func fire() {
        let race = state.withLock { state -> Race? in
            state.fired = true
            defer { state.race = nil }
            return state.race
        }
        race?.finish(.connectionClosed)
    }

    /// Whether the wait may start (not when the interrupt has fired already).
    fileprivate func attach(_ race: Race) -> Bool {
        state.withLock { state in
            if state.fired { return false }
            state.race = race
            return true
        }
    }

    fileprivate func detach(_ race: Race) {
        state.withLock { state in
            if state.race === race { state.race = nil }
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
