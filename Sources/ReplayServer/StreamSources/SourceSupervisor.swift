import Dispatch
import Foundation
import Logging
import ReplayCore
import ReplayModel
import ReplayProtocol
import ReplayStore
import ReplaySync

/// Runs one stream's source according to its connect mode, the conversions of a cold
/// signal to a hot one that the ReactiveCocoa cold/hot articles teach (ReplayCore's
/// model; README), made durable:
/// - `eager` is `replay()`: connect now (at creation, at every daemon start);
/// - `lazy` is `replayLazily()`: connect on the first subscriber, then stay connected;
/// - `refcount` is `autoconnect()`: connected while anyone subscribes.
///
/// A scheduled source (`SourceOptions.schedule`) runs its command once per tick instead:
/// each run is claimed in the database first (`EventStore.claimSourceTick`), so it runs
/// once, on one daemon; its end does not end the stream (`TickPlan`).
///
/// The source is a cold `Signal` (one run per subscription) multicast into the stream's
/// sink, so these are the core's `MulticastConnection.connect()` and `autoconnect()`. A
/// terminal stream never runs its source again, across restarts too, until it is reset.
///
/// Its decisions are `SourceState`'s, a state machine without I/O; this class performs
/// them: asks the store for the claim, connects, schedules on the sources' queue.
final class SourceSupervisor: Sendable {
    typealias Status = SourceState.Status

    /// How often a daemon that wants to run a source held by another daemon (a shared
    /// database) asks again: the holder's death frees it, and this is how long the source
    /// stays stopped at most after that.
    static let claimRetry: DispatchTimeInterval = .seconds(1)
    /// On a shared database, how long a fresh claim waits before starting the source: a
    /// daemon whose session to the database dropped (its lock with it) notices within
    /// `claimRetry` and stops its run, so the two runs do not overlap.
    static let claimGrace: DispatchTimeInterval = .seconds(2)

    let stream: String
    let source: StreamSource
    var settings: SourceOptions { source.options }
    private let store: EventStore
    private let logger: Logger
    private let state: Locked<SourceState>
    private let restarts = QueueScheduler(label: "replay.source-restarts")

    /// The registry's queue: where this source is connected (spawned) and leased.
    private let control: DispatchQueue
    private let runs: SourceRuns

    init(stream: String, source: StreamSource, store: EventStore, control: DispatchQueue, runs: SourceRuns, logger: Logger) {
        self.stream = stream
        self.control = control
        self.runs = runs
        self.source = source
        self.store = store
        self.state = Locked(SourceState(shared: store.isShared))
        var logger = logger
        logger[metadataKey: "stream"] = "\(stream)"
        self.logger = logger
    }

    /// At daemon start and when the stream is created or reset: eager sources run now.
    func activate() {
        let terminal = store.info(stream)?.terminal
        guard state.withLock({ $0.activate(terminal: terminal) }) else { return }
        if let schedule = settings.schedule { return startTicking(schedule) }
        arm()
        if source.connect == .eager { connectOnce() }
    }

    /// A subscriber arrived; the result is released when it leaves. Called on the sources'
    /// queue (`SourceRegistry.lease`), where the connecting (a spawn) happens; the release
    /// goes there too.
    func lease() -> any Disposable {
        dispatchPrecondition(condition: .onQueue(control))
        switch source.connect {
        case .eager:
            return Disposables.empty
        case .lazy:
            connectOnce()
            return Disposables.empty
        case .refcount:
            guard let shared = state.withLock({ $0.leasable }) else { return Disposables.empty }
            let held = SerialDisposable()
            state.withLock { $0.leased(held) }
            holdWhenClaimed(held, shared)
            return Disposables.action { [control, self] in
                control.async { [self] in
                    held.dispose()
                    // The last subscriber here left: another daemon's may run it now.
                    if state.withLock({ $0.released(held) }) { store.releaseSource(stream) }
                }
            }
        }
    }

    /// Subscribes `held` to the refcounted source once this daemon holds its claim; asks
    /// again while the lease lasts (sources' queue only).
    private func holdWhenClaimed(_ held: SerialDisposable, _ shared: Signal<Data>, claimGranted: Bool? = nil) {
        guard !held.isDisposed else { return }
        switch state.withLock({ $0.hold(now: .now(), claimGranted: claimGranted) }) {
        case .nothing:
            return
        case .askForClaim:
            holdWhenClaimed(held, shared, claimGranted: store.claimSource(stream))
        case .waitUntil(let after):
            control.asyncAfter(deadline: after) { [self] in holdWhenClaimed(held, shared) }
        case .retryLater:
            control.asyncAfter(deadline: .now() + Self.claimRetry) { [self] in holdWhenClaimed(held, shared) }
        case .run(let watch):
            held.inner = shared.subscribe()
            if watch { startWatching() }
        }
    }

    /// While the source runs here on a shared database: checks every `claimRetry` that the
    /// claim still holds, and stops the run if not (the session holding it dropped, so
    /// another daemon may claim it); then it is claimed again like a new one.
    private func startWatching() {
        if state.withLock({ $0.startWatching() }) { watchClaim() }
    }

    private func watchClaim() {
        control.asyncAfter(deadline: .now() + Self.claimRetry) { [self] in
            guard state.withLock({ $0.watchDue() }) else { return }
            if store.holdsSource(stream) { return watchClaim() }
            logger.warning("the claim on the source was lost with its database session; stopping it here")
            let lost = state.withLock { $0.claimLost() }
            lost.connection?.dispose()
            if source.connect == .refcount, let shared = lost.autoconnected {
                // Every subscription here lets go (the refcounted run stops), then each waits for a claim again.
                for holder in lost.holders { holder.inner = Disposables.empty }
                for holder in lost.holders { holdWhenClaimed(holder, shared) }
            } else {
                arm()
                connectOnce()
            }
        }
    }

    /// Gives the claim up once the source no longer runs here (sources' queue only).
    private func releaseClaim() {
        if state.withLock({ $0.giveUpClaim() }) { store.releaseSource(stream) }
    }

    /// Stops the source without ending the stream (shutdown, deletion).
    func retire() {
        state.withLock { $0.retire() }?.dispose()
        control.async { [self] in releaseClaim() }
    }

    /// The stream's terminal event was cleared: the source may run again.
    func reset() {
        state.withLock { $0.reset() }?.dispose()
        activate()
    }

    // MARK: Ticks

    /// A scheduled source: a run now if ticks were missed while the daemon was down (one,
    /// however many), then one at each tick (sources' queue).
    private func startTicking(_ schedule: CronSchedule) {
        // The next tick is known at once (INFO says it); the one missed while down, once
        // the store is read, on the sources' queue.
        let chain = state.withLock { $0.startTicking(next: schedule.next(after: Date())) }
        control.async { [self] in
            let lastTick: Int64?
            do {
                lastTick = try store.lastSourceTick(of: stream)
            } catch {
                logger.warning("could not read the source's last tick; ticks missed meanwhile are not made up", metadata: ["error": "\(error)"])
                lastTick = Timestamp.millis(Date())
            }
            let now = Date()
            let plan = TickPlan.start(schedule, lastTick: lastTick, created: store.info(stream)?.createdAt ?? now, now: now)
            if let catchUp = plan.catchUp { claimAndRun(catchUp) }
            tick(at: plan.next, schedule, chain)
        }
    }

    /// Waits for the tick at `time`, claims and runs it, and goes on to the next; stops once
    /// the chain is over (retired, ended, activated again).
    private func tick(at time: Date?, _ schedule: CronSchedule, _ chain: Int) {
        guard state.withLock({ $0.ticks(chain, next: time) }), let time else { return }
        control.asyncAfter(wallDeadline: .now() + max(0, time.timeIntervalSinceNow)) { [self] in
            guard state.withLock({ $0.ticks(chain, next: time) }) else { return }
            claimAndRun(Timestamp.millis(time))
            tick(at: schedule.next(after: max(time, Date())), schedule, chain)
        }
    }

    /// Runs the command for the tick `claim` if this daemon claims it first.
    private func claimAndRun(_ claim: Int64) {
        store.claimSourceTick(stream, tick: claim) { [control, logger, self] result in
            switch result {
            case .success(true): control.async { [self] in runTick() }
            case .success(false): break
            case .failure(let error): logger.warning("could not claim the source's tick; it does not run here", metadata: ["error": "\(error)"])
            }
        }
    }

    /// One tick's run: the command once, its output appended; its end leaves the stream
    /// open. A tick that comes while the previous run still runs is skipped.
    private func runTick() {
        let holder = SerialDisposable()
        guard state.withLock({ $0.tickRunStarts(holder) }) else {
            return logger.warning("a tick came while the source's previous run still ran; skipped")
        }
        let sink = StreamSink(store: store, stream: stream, logger: logger) { [self] event in tickRunEnded(event) }
        holder.inner = sourceSignal(into: sink).multicast(sink).connect()
    }

    private func tickRunEnded(_ event: Event<Data>) {
        switch event {
        case .failed(let error as StoreError):
            // The stream was ended by hand (or deleted) while it ran: no more ticks.
            if case .terminated = error { return retire() }
            state.withLock { $0.tickRunEnded(failure: "\(error)") }
        case .failed(let error):
            logger.warning("the source's run failed; it runs again at the next tick", metadata: ["error": "\(error)"])
            state.withLock { $0.tickRunEnded(failure: "\(error)") }
        default:
            state.withLock { $0.tickRunEnded(failure: nil) }
        }
    }

    // MARK: Machinery

    /// A fresh connection: the source signal (with its restart policy) multicast into the sink.
    private func arm() {
        let sink = StreamSink(store: store, stream: stream, logger: logger) { [self] event in ended(event) }
        let connection = sourceSignal(into: sink).multicast(sink)
        let armed = SourceState.Armed(connection: connection, autoconnected: connection.autoconnect())
        state.withLock { $0.arm(armed) }
    }

    /// The source's command as a cold signal, with its restart policy, read as fast as
    /// `sink` admits its output.
    private func sourceSignal(into sink: StreamSink) -> ReplayCore.Signal<Data> {
        let settings = self.settings
        var signal = SourceSignal.make(
            command: source.command, settings: settings, runs: runs, environment: { [self] in environment() },
            admit: { await sink.admit() },
            started: { [self] pid in
                state.withLock { $0.processStarted(pid: pid) }
                logger.info("source started", metadata: ["pid": "\(pid)"])
            },
            stopped: { [self] pid in
                state.withLock { $0.processStopped(pid: pid) }
                logger.info("source stopped", metadata: ["pid": "\(pid)"])
            })
        if settings.restart == .onFailure {
            signal =
                signal
                .on(failed: { [self] error in
                    logger.warning("source failed; restarting", metadata: ["error": "\(error)"])
                    state.withLock { $0.restarting(after: "\(error)") }
                })
                .retry(upTo: settings.maxRestarts, delay: { attempt in min(60, settings.restartDelay * pow(2, Double(attempt - 1))) }, on: restarts)
        }
        return signal
    }

    /// Connects the source here once this daemon holds its claim; until then asks again
    /// every `claimRetry` (sources' queue only).
    private func connectOnce(claimGranted: Bool? = nil) {
        // Ended by another daemon's run of it (a shared database): nothing to run.
        guard store.info(stream)?.terminal == nil else { return }
        let (action, armed) = state.withLock { ($0.connect(now: .now(), claimGranted: claimGranted), $0.armed) }
        switch action {
        case .nothing:
            return
        case .askForClaim:
            connectOnce(claimGranted: store.claimSource(stream))
        case .waitUntil(let after):
            control.asyncAfter(deadline: after) { [self] in connectOnce() }
        case .retryLater:
            control.asyncAfter(deadline: .now() + Self.claimRetry) { [self] in
                state.withLock { $0.claimRetryDue() }
                connectOnce()
            }
        case .run(let watch):
            guard let armed else { return }
            let disposable = armed.connection.connect()
            state.withLock { $0.connected(disposable) }
            if watch { startWatching() }
        }
    }

    /// The source's run ended on its own (after any restarts): store the stream's end.
    private func ended(_ event: Event<Data>) {
        if case .failed(let error) = event, let storeError = error as? StoreError, case .terminated = storeError {
            // Someone ended the stream by hand while the source ran: stop it.
            return retire()
        }
        let terminal: Terminal = if case .failed(let error) = event { .failed(message: "\(error)") } else { .completed }
        state.withLock { $0.ended(terminal) }
        logger.info("source ended", metadata: ["result": "\(terminal)"])
        store.terminate(stream, terminal) { [logger, control, self] result in
            if case .failure(let error) = result { logger.warning("could not store the source's end", metadata: ["error": "\(error)"]) }
            // Only once the end is committed: another daemon claiming it then sees the end.
            control.async { [self] in releaseClaim() }
        }
    }

    /// What the source sees besides the daemon's environment: where the stream stands, so
    /// it can resume where it left off.
    private func environment() -> [String: String] {
        var environment = ["REPLAY_STREAM": stream]
        let last = store.info(stream)?.lastSequence ?? 0
        environment["REPLAY_LAST_SEQ"] = "\(last)"
        if last > 0, let event = try? store.read(stream, from: last, limit: 1).first,
            event.payload.count <= 4096, !event.payload.contains(0), let text = String(data: event.payload, encoding: .utf8)
        {
            environment["REPLAY_LAST_PAYLOAD"] = text
        }
        return environment
    }

    /// For INFO.
    var description: SourceDescription {
        let (status, starts, lastFailure, nextTick) = state.withLock { ($0.status, $0.starts, $0.lastFailure, $0.nextTick) }
        return Self.describe(source, status: status, starts: starts, lastFailure: lastFailure, nextTick: nextTick)
    }

    /// What INFO says of `source` in this state; a source not yet adopted is `.notConnected`.
    static func describe(
        _ source: StreamSource, status: SourceState.Status = .notConnected, starts: Int = 0, lastFailure: String? = nil, nextTick: Date? = nil
    ) -> SourceDescription {
        let settings = source.options
        let scheduled = settings.schedule != nil
        let (name, pid, reason): (String, Int32?, String?) =
            switch status {
            case .notConnected where scheduled, .stopped where scheduled: ("waiting", nil, lastFailure)
            case .notConnected: ("not connected", nil, nil)
            case .running(let pid): ("running", pid, lastFailure)
            case .restarting: ("restarting", nil, lastFailure)
            case .stopped: ("stopped", nil, lastFailure)
            case .ended(let terminal): (terminal.kind, nil, terminal.message)
            }
        var description = SourceDescription(
            command: source.command, connect: source.connect.rawValue, framing: settings.framing.rawValue,
            restart: settings.restart.rawValue, state: name, pid: pid, starts: starts, reason: reason)
        description.schedule = settings.schedule?.text
        description.nextRun = nextTick.map(Timestamp.format)
        return description
    }
}
