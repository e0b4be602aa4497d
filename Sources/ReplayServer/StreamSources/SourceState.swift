import Dispatch
import Foundation
import ReplayCore
import ReplayStore

/// What a `SourceSupervisor` knows, and every decision it makes, without I/O: the
/// supervisor asks under its one lock, gets an action, and performs it (asks the store for
/// the claim, connects, schedules, disposes) with the lock let go. Each decision is one
/// call, so nothing is checked under one acquisition and acted on under another; each
/// transition is tested alone (`SourceStateTests`).
struct SourceState {
    /// Where the source's process stands, as INFO shows it.
    enum Status: Sendable, Equatable {
        case notConnected
        case running(pid: Int32)
        case restarting(attempt: Int)
        case stopped
        /// The stream ended (by this source or by hand): the source does not run again
        /// until it is reset.
        case ended(Terminal)
    }

    /// This daemon's right to run the source (`EventStore.claimSource`): on a shared
    /// database, one daemon at a time holds it.
    enum Claim: Equatable {
        case notHeld
        /// Not held, and a retry of the claim is scheduled.
        case retryScheduled
        /// Held; on a shared database, not used before `startsAfter`.
        case held(startsAfter: DispatchTime?)
    }

    /// What to do to run the source here (connect it, or subscribe a refcount lease).
    enum RunAction: Equatable {
        /// Nothing: the source is retired or its stream ended (or a retry is already scheduled).
        case nothing
        /// Ask the store for the claim, then tell `claimAnswered`.
        case askForClaim
        /// The claim is held but may not be used yet: ask again then.
        case waitUntil(DispatchTime)
        /// Another daemon holds the claim: ask again after `claimRetry`.
        case retryLater
        /// Run it; `watch` says to start checking the claim still holds (a shared database).
        case run(watch: Bool)
    }

    /// The machinery of one armed run: the source multicast into the stream's sink.
    struct Armed {
        let connection: MulticastConnection<Data>
        let autoconnected: Signal<Data>
    }

    /// What a lost claim leaves to stop.
    struct Lost {
        let connection: (any Disposable)?
        let holders: [SerialDisposable]
        let autoconnected: Signal<Data>?
    }

    let shared: Bool
    private(set) var status = Status.notConnected
    private(set) var starts = 0
    private(set) var claim = Claim.notHeld
    private(set) var armed: Armed?
    private(set) var connection: (any Disposable)?
    private(set) var retired = false
    /// The refcount leases' subscriptions here, to stop them all if the claim is lost.
    private(set) var holders: [ObjectIdentifier: SerialDisposable] = [:]
    /// Whether the claim is being checked (`SourceSupervisor.watchClaim`).
    private(set) var watching = false
    /// A scheduled source's chain of ticks (a new one at each activation, so that a reset
    /// does not leave two), and its next tick.
    private(set) var tickChain = 0
    private(set) var nextTick: Date?

    init(shared: Bool) {
        self.shared = shared
    }

    var isTerminal: Bool {
        if case .ended = status { return true }
        return false
    }

    private var isOut: Bool { retired || isTerminal }

    private var holdsClaim: Bool {
        if case .held = claim { return true }
        return false
    }

    // MARK: Life

    /// At daemon start and when the stream is created or reset: `false` if the stream has
    /// already ended, and nothing is to run.
    mutating func activate(terminal: Terminal?) -> Bool {
        guard let terminal else { return true }
        status = .ended(terminal)
        return false
    }

    mutating func arm(_ armed: Armed) {
        self.armed = armed
    }

    /// Stops the source without ending the stream (shutdown, deletion): the run to dispose.
    mutating func retire() -> (any Disposable)? {
        retired = true
        nextTick = nil
        if case .running = status { status = .stopped }
        defer { connection = nil }
        return connection
    }

    /// The stream's end was cleared: the ended run to dispose before activating again.
    mutating func reset() -> (any Disposable)? {
        guard isTerminal else { return nil }
        status = .notConnected
        defer { connection = nil }
        return connection
    }

    /// The source's run ended on its own (after any restarts).
    mutating func ended(_ terminal: Terminal) {
        status = .ended(terminal)
    }

    // MARK: The process

    mutating func processStarted(pid: Int32) {
        starts += 1
        status = .running(pid: pid)
    }

    mutating func processStopped(pid: Int32) {
        if status == .running(pid: pid) { status = .stopped }
    }

    /// Why the last run failed (its exit status and stderr's last lines), while the
    /// source restarts and after: the live view shows it beside the state.
    private(set) var lastFailure: String?

    mutating func restarting(after failure: String) {
        status = .restarting(attempt: starts)
        lastFailure = failure
    }

    // MARK: Ticks (a scheduled source)

    /// Starts a new chain of ticks, whose first is at `next`; its number.
    mutating func startTicking(next: Date?) -> Int {
        tickChain += 1
        nextTick = next
        return tickChain
    }

    /// Whether the chain `chain` goes on (the source is neither retired nor ended, and not
    /// activated again since), its next tick being `next`.
    mutating func ticks(_ chain: Int, next: Date?) -> Bool {
        guard chain == tickChain, !isOut else { return false }
        nextTick = next
        return true
    }

    /// A tick's run starts with `holder` for its disposal: `false` while the previous run
    /// still runs (the tick is skipped) or the source is out.
    mutating func tickRunStarts(_ holder: any Disposable) -> Bool {
        guard !isOut, connection == nil else { return false }
        connection = holder
        return true
    }

    /// A tick's run ended on its own; `failure`: why it failed.
    mutating func tickRunEnded(failure: String?) {
        connection = nil
        if case .running = status { status = .stopped }
        if let failure { lastFailure = failure }
    }

    // MARK: Connecting (eager and lazy)

    /// Whether to connect the armed run now. `claimGranted` is the store's answer to the
    /// `askForClaim` this returned before, if that is why it is asked again.
    mutating func connect(now: DispatchTime, claimGranted: Bool? = nil) -> RunAction {
        guard !isOut, armed != nil else { return .nothing }
        switch decideRun(now: now, claimGranted: claimGranted) {
        case .retryLater:
            // One retry scheduled at a time, however often a lazy source is asked for.
            guard claim != .retryScheduled else { return .nothing }
            claim = .retryScheduled
            return .retryLater
        case .run:
            return .run(watch: shared && connection == nil)
        case let other:
            return other
        }
    }

    /// A scheduled retry of the claim is due.
    mutating func claimRetryDue() {
        if claim == .retryScheduled { claim = .notHeld }
    }

    /// The armed run is connected.
    mutating func connected(_ disposable: any Disposable) {
        connection = disposable
    }

    // MARK: Refcount leases

    /// The shared run a new subscriber may hold; `nil` if nothing is to run.
    var leasable: Signal<Data>? { isOut ? nil : armed?.autoconnected }

    mutating func leased(_ holder: SerialDisposable) {
        holders[ObjectIdentifier(holder)] = holder
    }

    /// Whether to subscribe a lease's holder now (see `connect`).
    mutating func hold(now: DispatchTime, claimGranted: Bool? = nil) -> RunAction {
        guard !retired else { return .nothing }
        let action = decideRun(now: now, claimGranted: claimGranted)
        if case .run = action { return .run(watch: shared) }
        return action
    }

    /// A lease ended: `true` if it was the last here and the claim is to be given up, so
    /// that another daemon's subscribers may run the source.
    mutating func released(_ holder: SerialDisposable) -> Bool {
        holders[ObjectIdentifier(holder)] = nil
        guard holders.isEmpty else { return false }
        return giveUpClaim()
    }

    // MARK: The claim

    /// Lets the claim go once the source no longer runs here: `true` if it was held, and
    /// the store is to release it.
    mutating func giveUpClaim() -> Bool {
        guard holdsClaim else { return false }
        claim = .notHeld
        return true
    }

    /// Whether to start checking that the claim still holds (not if already checking).
    mutating func startWatching() -> Bool {
        defer { watching = true }
        return !watching
    }

    /// A check of the claim is due: `true` to ask the store whether it still holds; `false`
    /// when nothing runs here any more, and the checking stops.
    mutating func watchDue() -> Bool {
        let running = !isOut && holdsClaim && (connection != nil || !holders.isEmpty)
        if !running { watching = false }
        return running
    }

    /// The claim was lost with the database session: what ran here, to stop.
    mutating func claimLost() -> Lost {
        claim = .notHeld
        watching = false
        if case .running = status { status = .notConnected }
        defer { connection = nil }
        return Lost(connection: connection, holders: Array(holders.values), autoconnected: armed?.autoconnected)
    }

    /// The part of `connect` and `hold` about the claim: held and usable, held but in its
    /// grace period, to be asked for, or refused.
    private mutating func decideRun(now: DispatchTime, claimGranted: Bool?) -> RunAction {
        if let claimGranted {
            guard claimGranted else { return .retryLater }
            claim = .held(startsAfter: shared ? now + SourceSupervisor.claimGrace : nil)
        }
        guard case .held(let startsAfter) = claim else { return .askForClaim }
        if let startsAfter, startsAfter > now { return .waitUntil(startsAfter) }
        return .run(watch: false)
    }
}
