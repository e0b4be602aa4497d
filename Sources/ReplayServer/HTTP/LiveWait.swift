import ReplaySync

/// How a live read's wait ended.
enum LiveWait: Sendable {
    case committed
    case timedOut
    /// The daemon is shutting down: end the response now rather than hold the shutdown.
    case shuttingDown
    /// The reader's connection closed (`WaitInterrupt`): end the response, no one reads it.
    case connectionClosed

    /// Waits for a commit of the watched hub after its sequence (a cursor's `watched`), at
    /// most `timeout` (up to a slot of `parked` more), ending early when the front door
    /// shuts down (`parked`), the task is cancelled, or `interrupt` fires.
    ///
    /// One continuation, resumed by whichever comes first: the hub's wake-up, the deadline
    /// or the shutdown (`ParkedReads`), the interrupt. No child task: a parked SSE reader
    /// is held by the thousand, and a task group of three (the commit, a sleep, the
    /// shutdown) cost each one three tasks of its own, about 5 KB, for as long as it was
    /// parked.
    static func wait(
        on watched: (hub: StreamHub, after: UInt64), timeout: Duration, parked: ParkedReads, interrupt: WaitInterrupt? = nil
    ) async -> LiveWait {
        let race = Race()
        if let interrupt, !interrupt.attach(race) { return .connectionClosed }
        defer { interrupt?.detach(race) }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                race.start(.task(continuation), hub: watched.hub, after: watched.after, timeout: timeout, parked: parked)
            }
        } onCancel: {
            race.finish(.timedOut)
        }
    }

    /// The same wait for a reader with no task (`ParkedEventStream`): `then` is called once
    /// with its outcome, on the thread that decided it (the writer's for a commit, an event
    /// loop's for a deadline or a close), so it must only hand the reader's next step on.
    static func park(
        on watched: (hub: StreamHub, after: UInt64), timeout: Duration, parked: ParkedReads, interrupt: WaitInterrupt,
        then resume: @escaping @Sendable (LiveWait) -> Void
    ) {
        let race = Race()
        guard interrupt.attach(race) else { return resume(.connectionClosed) }
        race.start(
            .callback { outcome in
                interrupt.detach(race)
                resume(outcome)
            }, hub: watched.hub, after: watched.after, timeout: timeout, parked: parked)
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
        var race: LiveWait.Race?
    }

    private let state = Locked(State())

    func fire() {
        let race = state.withLock { state -> LiveWait.Race? in
            state.fired = true
            defer { state.race = nil }
            return state.race
        }
        race?.finish(.connectionClosed)
    }

    /// Whether the wait may start (not when the interrupt has fired already).
    fileprivate func attach(_ race: LiveWait.Race) -> Bool {
        state.withLock { state in
            if state.fired { return false }
            state.race = race
            return true
        }
    }

    fileprivate func detach(_ race: LiveWait.Race) {
        state.withLock { state in
            if state.race === race { state.race = nil }
        }
    }
}

extension LiveWait {
    /// One wait's outcome, decided once, by whichever of its wake-ups comes first; the others
    /// are withdrawn.
    final class Race: Sendable {
        /// Who waits: a task, or a reader with no task of its own.
        enum Waiter: Sendable {
            case task(CheckedContinuation<LiveWait, Never>)
            case callback(@Sendable (LiveWait) -> Void)

            func resume(_ outcome: LiveWait) {
                switch self {
                case .task(let continuation): continuation.resume(returning: outcome)
                case .callback(let resume): resume(outcome)
                }
            }
        }

        private struct State {
            var outcome: LiveWait?
            var waiter: Waiter?
            var deadline: (parked: ParkedReads, ticket: ParkedReads.Ticket)?
            var ticket: (hub: StreamHub, id: UInt64)?
        }

        private let state = Locked(State())

        func start(
            _ waiter: Waiter, hub: StreamHub, after sequence: UInt64, timeout: Duration, parked: ParkedReads
        ) {
            // Shutdown or cancellation may have come first.
            if let outcome = state.withLock({ state in
                if state.outcome == nil { state.waiter = waiter }
                return state.outcome
            }) {
                return waiter.resume(outcome)
            }
            guard let deadline = parked.park(self, timeout: timeout) else { return finish(.shuttingDown) }
            let id = hub.onCommit(after: sequence) { self.finish(.committed) }
            let decided = state.withLock { state in
                if state.outcome == nil {
                    state.deadline = (parked, deadline)
                    state.ticket = id.map { (hub, $0) }
                }
                return state.outcome != nil
            }
            if decided {
                parked.leave(deadline)
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
            if let deadline = taken.deadline { deadline.parked.leave(deadline.ticket) }
            if let ticket = taken.ticket { ticket.hub.stopWaiting(ticket.id) }
            taken.waiter?.resume(outcome)
        }
    }
}
