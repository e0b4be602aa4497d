import Dispatch
import Foundation
import Logging
import ReplayCore
import ReplayModel
import ReplayProtocol
import ReplayStore

/// Runs one stream's source according to its connect mode, the conversions of a cold
/// signal to a hot one that the ReactiveCocoa cold/hot articles teach (ReplayCore's
/// model; README), made durable:
/// - `eager` is `replay()`: connect now (at creation, at every daemon start);
/// - `lazy` is `replayLazily()`: connect on the first subscriber, then stay connected;
/// - `refcount` is `autoconnect()`: connected while anyone subscribes.
///
/// The source is a cold `Signal` (one run per subscription) multicast into the stream's
/// sink, so these are the core's `MulticastConnection.connect()` and `autoconnect()`. A
/// terminal stream never runs its source again, across restarts too, until it is reset.
final class SourceSupervisor: Sendable {
    enum Status: Sendable, Equatable {
        case notConnected
        case running(pid: Int32)
        case restarting(attempt: Int)
        case stopped
        /// The stream ended (by this source or by hand): the source does not run again
        /// until it is reset.
        case ended(Terminal)
    }

    private struct State {
        var status = Status.notConnected
        var starts = 0
        var connection: MulticastConnection<Data>?
        var autoconnected: Signal<Data>?
        var connectionDisposable: (any Disposable)?
        var retired = false
        /// Whether this daemon holds the right to run the source (`EventStore.claimSource`).
        var claimed = false
        /// Whether a retry of the claim is scheduled.
        var claimRetryPending = false
        /// Refcount leases that hold the source connected here.
        var leases = 0
        /// On a shared database: not before this may a fresh claim start the source.
        var startsAfter: DispatchTime?
        /// The refcount leases' subscriptions, to stop them all if the claim is lost.
        var holders: [ObjectIdentifier: SerialDisposable] = [:]
        /// Whether `watchClaim` runs.
        var watching = false
    }

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
    private let state = Locked(State())
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
        var logger = logger
        logger[metadataKey: "stream"] = "\(stream)"
        self.logger = logger
    }

    /// At daemon start and when the stream is created or reset: eager sources run now.
    func activate() {
        if let terminal = store.info(stream)?.terminal {
            state.withLock { $0.status = .ended(terminal) }
            return
        }
        arm()
        if source.connect == .eager { connectOnce() }
    }

    /// A subscriber arrived; the result is released when it leaves. Called from the
    /// subscriber's task: the connecting (a spawn) happens on the sources' queue, and so
    /// does the release, after it.
    func lease() -> any Disposable {
        switch source.connect {
        case .eager:
            return Disposables.empty
        case .lazy:
            control.async { [self] in connectOnce() }
            return Disposables.empty
        case .refcount:
            guard let shared = state.withLock({ $0.retired || Self.isTerminal($0.status) ? nil : $0.autoconnected }) else {
                return Disposables.empty
            }
            let held = SerialDisposable()
            control.async { [self] in
                state.withLock { state in
                    state.leases += 1
                    state.holders[ObjectIdentifier(held)] = held
                }
                holdWhenClaimed(held, shared)
            }
            return Disposables.action { [control, self] in
                control.async { [self] in
                    held.dispose()
                    // The last subscriber here left: another daemon's may run it now.
                    let release = state.withLock { state in
                        state.holders[ObjectIdentifier(held)] = nil
                        state.leases -= 1
                        defer { if state.leases == 0 { state.claimed = false } }
                        return state.leases == 0 && state.claimed
                    }
                    if release { store.releaseSource(stream) }
                }
            }
        }
    }

    /// Subscribes `held` to the refcounted source once this daemon holds its claim; asks
    /// again while the lease lasts.
    private func holdWhenClaimed(_ held: SerialDisposable, _ shared: Signal<Data>) {
        guard !held.isDisposed, !state.withLock({ $0.retired }) else { return }
        if claim() {
            if let after = state.withLock({ $0.startsAfter }), after > .now() {
                return control.asyncAfter(deadline: after) { [self] in holdWhenClaimed(held, shared) }
            }
            held.inner = shared.subscribe()
            if store.isShared { startWatching() }
        } else {
            control.asyncAfter(deadline: .now() + Self.claimRetry) { [self] in holdWhenClaimed(held, shared) }
        }
    }

    /// Whether this daemon may run the source now (sources' queue only).
    private func claim() -> Bool {
        if state.withLock({ $0.claimed }) { return true }
        guard store.claimSource(stream) else { return false }
        let shared = store.isShared
        state.withLock { state in
            state.claimed = true
            state.startsAfter = shared ? .now() + Self.claimGrace : nil
        }
        return true
    }

    /// While the source runs here on a shared database: checks every `claimRetry` that the
    /// claim still holds, and stops the run if not (the session holding it dropped, so
    /// another daemon may claim it); then it is claimed again like a new one.
    private func startWatching() {
        let start = state.withLock { state in
            defer { state.watching = true }
            return !state.watching
        }
        if start { watchClaim() }
    }

    private func watchClaim() {
        control.asyncAfter(deadline: .now() + Self.claimRetry) { [self] in
            let running = state.withLock { state in
                let running =
                    !state.retired && state.claimed && (state.connectionDisposable != nil || !state.holders.isEmpty)
                    && !Self.isTerminal(state.status)
                if !running { state.watching = false }
                return running
            }
            guard running else { return }
            if store.holdsSource(stream) { return watchClaim() }
            logger.warning("the claim on the source was lost with its database session; stopping it here")
            let (old, holders, shared) = state.withLock { state in
                state.claimed = false
                state.watching = false
                if case .running = state.status { state.status = .notConnected }
                defer { state.connectionDisposable = nil }
                return (state.connectionDisposable, Array(state.holders.values), state.autoconnected)
            }
            old?.dispose()
            if source.connect == .refcount, let shared {
                // Every subscription here lets go (the refcounted run stops), then each waits for a claim again.
                for holder in holders { holder.inner = Disposables.empty }
                for holder in holders { holdWhenClaimed(holder, shared) }
            } else {
                arm()
                connectOnce()
            }
        }
    }

    /// Gives the claim up once the source no longer runs here (sources' queue only).
    private func releaseClaim() {
        if state.withLock({ state in
            defer { state.claimed = false }; return state.claimed
        }) {
            store.releaseSource(stream)
        }
    }

    /// Stops the source without ending the stream (shutdown, deletion).
    func retire() {
        let disposable = state.withLock { state -> (any Disposable)? in
            state.retired = true
            if case .running = state.status { state.status = .stopped }
            defer { state.connectionDisposable = nil }
            return state.connectionDisposable
        }
        disposable?.dispose()
        control.async { [self] in releaseClaim() }
    }

    /// The stream's terminal event was cleared: the source may run again.
    func reset() {
        let old = state.withLock { state -> (any Disposable)? in
            guard Self.isTerminal(state.status) else { return nil }
            state.status = .notConnected
            defer { state.connectionDisposable = nil }
            return state.connectionDisposable
        }
        old?.dispose()
        if !state.withLock({ Self.isTerminal($0.status) }) { activate() }
    }

    // MARK: Machinery

    /// A fresh connection: the source signal (with its restart policy) multicast into the sink.
    private func arm() {
        let settings = self.settings
        let sink = StreamSink(store: store, stream: stream, logger: logger) { [self] event in ended(event) }
        var signal = SourceSignal.make(
            command: source.command, settings: settings, runs: runs, environment: { [self] in environment() },
            admit: { await sink.admit() },
            started: { [self] pid in
                state.withLock { state in
                    state.starts += 1
                    state.status = .running(pid: pid)
                }
                logger.info("source started", metadata: ["pid": "\(pid)"])
            },
            stopped: { [self] pid in
                state.withLock { state in
                    if state.status == .running(pid: pid) { state.status = .stopped }
                }
                logger.info("source stopped", metadata: ["pid": "\(pid)"])
            })
        if settings.restart == .onFailure {
            signal =
                signal
                .on(failed: { [self] error in
                    logger.warning("source failed; restarting", metadata: ["error": "\(error)"])
                    state.withLock { $0.status = .restarting(attempt: $0.starts) }
                })
                .retry(upTo: settings.maxRestarts, delay: { attempt in min(60, settings.restartDelay * pow(2, Double(attempt - 1))) }, on: restarts)
        }
        let connection = signal.multicast(sink)
        let autoconnected = connection.autoconnect()
        state.withLock { state in
            state.connection = connection
            state.autoconnected = autoconnected
        }
    }

    /// Connects the source here once this daemon holds its claim; until then asks again
    /// every `claimRetry` (sources' queue only).
    private func connectOnce() {
        guard let connection = state.withLock({ $0.retired || Self.isTerminal($0.status) ? nil : $0.connection }) else { return }
        // Ended by another daemon's run of it (a shared database): nothing to run.
        guard store.info(stream)?.terminal == nil else { return }
        guard claim() else {
            let schedule = state.withLock { state in
                defer { state.claimRetryPending = true }
                return !state.claimRetryPending
            }
            if schedule {
                control.asyncAfter(deadline: .now() + Self.claimRetry) { [self] in
                    state.withLock { $0.claimRetryPending = false }
                    connectOnce()
                }
            }
            return
        }
        if let after = state.withLock({ $0.startsAfter }), after > .now() {
            control.asyncAfter(deadline: after) { [self] in connectOnce() }
            return
        }
        let alreadyConnected = state.withLock { $0.connectionDisposable != nil }
        let disposable = connection.connect()
        state.withLock { $0.connectionDisposable = disposable }
        if store.isShared && !alreadyConnected { startWatching() }
    }

    /// The source's run ended on its own (after any restarts): store the stream's end.
    private func ended(_ event: Event<Data>) {
        if case .failed(let error) = event, let storeError = error as? StoreError, case .terminated = storeError {
            // Someone ended the stream by hand while the source ran: stop it.
            return retire()
        }
        let terminal: Terminal = if case .failed(let error) = event { .failed(message: "\(error)") } else { .completed }
        state.withLock { $0.status = .ended(terminal) }
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

    private static func isTerminal(_ status: Status) -> Bool {
        if case .ended = status { return true }
        return false
    }

    /// For INFO.
    var description: SourceDescription {
        let (status, starts) = state.withLock { ($0.status, $0.starts) }
        let (name, pid, reason): (String, Int32?, String?) =
            switch status {
            case .notConnected: ("not connected", nil, nil)
            case .running(let pid): ("running", pid, nil)
            case .restarting: ("restarting", nil, nil)
            case .stopped: ("stopped", nil, nil)
            case .ended(let terminal): (terminal.kind, nil, terminal.message)
            }
        return SourceDescription(
            command: source.command, connect: source.connect.rawValue, framing: settings.framing.rawValue,
            restart: settings.restart.rawValue, state: name, pid: pid, starts: starts, reason: reason)
    }
}
