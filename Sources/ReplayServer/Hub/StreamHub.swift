import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol
import ReplayStore
import ReplaySync
import Synchronization

/// The live state of one stream, shared by its subscriptions: the last committed sequence,
/// the retained window, the terminal state, a tail ring of recent events, and the
/// subscriptions parked waiting for the next commit.
///
/// Updated only by commits (on the store's writer thread); read by subscriptions. A
/// subscription is a cursor: it asks `step(at:)` what to do at its position, and parks
/// in `waitForCommit` when caught up. Memory per subscriber is one integer.
final class StreamHub: Sendable {
    /// What a subscription at position `next` should do now.
    enum Step {
        /// Send these events from memory.
        case send([TailRing.Entry])
        /// Read `next...through` from the store.
        case read(through: UInt64)
        /// Events `next...through` are gone (trimmed by retention): say so, skip them.
        case gap(through: UInt64)
        /// Nothing more yet: wait for a commit.
        case wait
        /// The stream ended after `lastSequence`.
        case end(Terminal, lastSequence: UInt64)
        /// The stream was deleted.
        case deleted
    }

    private struct State {
        var info: StreamInfo
        var ring: TailRing
        /// Parked cursors: the sequence each waits to see passed, and how to wake it.
        var waiters: [UInt64: (after: UInt64, wake: @Sendable () -> Void)] = [:]
        var nextWaiterID: UInt64 = 0
        var deleted = false
        var subscribers = 0
        /// Commits applied: what a reader read from the hub is still what it holds while
        /// this stays the same.
        var commits: UInt64 = 0
    }

    let name: String
    private let state: Locked<State>
    /// Events delivered to readers of this stream on this daemon (both doors), for the
    /// live view's delivery rate: an atomic, so delivering costs no lock.
    private let deliveredEvents = Atomic<Int>(0)

    /// The time (ms since 1970) an event's expiry is judged by.
    private let clock: @Sendable () -> Int64

    init(info: StreamInfo, tailEvents: Int, tailBytes: Int, clock: @escaping @Sendable () -> Int64 = { Timestamp.millis(Date()) }) {
        self.clock = clock
        name = info.name
        state = Locked(State(info: info, ring: TailRing(maxEvents: tailEvents, maxBytes: tailBytes)))
    }

    var info: StreamInfo { state.withLock { $0.info } }
    var subscriberCount: Int { state.withLock { $0.subscribers } }
    var delivered: Int { deliveredEvents.load(ordering: .relaxed) }

    /// Counts a delivery, here and in the daemon's metrics.
    func delivered(events: Int, bytes: Int) {
        deliveredEvents.add(events, ordering: .relaxed)
        DaemonMetrics.delivered(events: events, bytes: bytes)
    }

    /// Applies a commit: new events into the ring, new bounds, and wakes parked cursors.
    func apply(_ change: CommitBatch.Change) {
        let waiters = state.withLock { state -> [@Sendable () -> Void] in
            state.commits += 1
            if let info = change.info {
                if info.lastSequence < state.info.lastSequence { state.ring.removeAll() }
                state.info = info
                for event in change.appended { state.ring.append(event) }
                // The ring ends at the stream's last event or is empty: a commit of another
                // daemon (a shared database) moves the bounds without events, which its
                // cursors then read from the store.
                if state.ring.lastSequence != info.lastSequence { state.ring.removeAll() }
                // Events removed from inside the window are read (as the gap they are) from the store.
                state.ring.removeFirst(through: info.removedThrough)
            } else {
                state.deleted = true
                state.ring.removeAll()
            }
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.wake)
        }
        for wake in waiters { wake() }
    }

    /// Where a new subscription starts, and the last event it counts as history: events
    /// up to `liveAfter` are replayed only if still retained; later ones are live and
    /// delivered even if retention has dropped them from the store since (as a replay
    /// subject gives every live value to its subscribers, whatever its capacity).
    ///
    /// `nil` for `since`, which needs the store to find its first sequence number.
    func start(_ start: StartPosition) -> StartPoint? {
        state.withLock { state in
            start.next(in: state.info).map { StartPoint(next: $0, liveAfter: state.info.lastSequence, snapshot: start == .snapshot) }
        }
    }

    func step(at next: UInt64, liveAfter: UInt64, limit: Int, byteBudget: Int, sharingFrom minimum: Int = .max) -> Step {
        state.withLock { state in
            // A stream deleted while forks read from it is deleted for its subscribers.
            if state.deleted || state.info.isSoftDeleted { return .deleted }
            let info = state.info
            if next > info.lastSequence {
                if let terminal = info.terminal { return .end(terminal, lastSequence: info.lastSequence) }
                return .wait
            }
            // History the subscriber asked for that retention no longer holds.
            if next <= liveAfter, next < info.firstSequence {
                return .gap(through: min(info.firstSequence - 1, liveAfter))
            }
            let ringFirst = state.ring.firstSequence ?? info.lastSequence + 1
            if next >= ringFirst {
                guard state.ring.expiring > 0 else {
                    return .send(state.ring.slice(from: next, limit: limit, byteBudget: byteBudget, sharingFrom: minimum))
                }
                // Expired events are never served: the store leaves them out, and the
                // reader reports them as a gap.
                let now = clock()
                if let expired = state.ring.expiredRun(from: next, by: now) { return .read(through: expired) }
                return .send(state.ring.slice(from: next, limit: limit, byteBudget: byteBudget, sharingFrom: minimum, expiredBy: now))
            }
            // Behind the ring: what the store still holds is read from it, the rest is gone.
            if next < info.firstSequence { return .gap(through: min(info.firstSequence, ringFirst) - 1) }
            return .read(through: ringFirst - 1)
        }
    }

    /// The commits applied so far, while what readers read from the hub is the same for
    /// every reader at the same position until the next: `nil` when it is not (an event
    /// in the ring expires as time passes), or the stream has ended. Readers share what
    /// they framed by it (`SharedFrames`).
    var sharedVersion: UInt64? {
        state.withLock { state in
            let live = !state.deleted && !state.info.isSoftDeleted && state.info.terminal == nil && state.ring.expiring == 0
            return live ? state.commits : nil
        }
    }

    /// Returns once there may be something new after `sequence` (a commit, the end, a
    /// deletion), or when the task is cancelled.
    func waitForCommit(after sequence: UInt64) async {
        let id = newWaiterID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                if !keep(id, after: sequence, unlessCancelled: true, { continuation.resume() }) { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.wake()
        }
    }

    /// Calls `wake` once there may be something new after `sequence` (at once if there
    /// already is), without a task waiting for it: a parked HTTP reader (`LiveWait`) races
    /// it against a timer. Returns the ticket that `stopWaiting` takes, `nil` when `wake`
    /// was called at once.
    func onCommit(after sequence: UInt64, _ wake: @escaping @Sendable () -> Void) -> UInt64? {
        let id = newWaiterID()
        guard keep(id, after: sequence, unlessCancelled: false, wake) else {
            wake()
            return nil
        }
        return id
    }

    private func newWaiterID() -> UInt64 {
        state.withLock { state in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
    }

    /// Keeps `wake` for the next commit, unless there may already be something new after
    /// `sequence` (or, with `unlessCancelled`, the task is cancelled). Decided under the
    /// lock `apply` takes, so no commit falls between the look and the keeping; `after` is
    /// what the state dump shows the waiter waiting past. Returns whether it was kept.
    private func keep(_ id: UInt64, after sequence: UInt64, unlessCancelled: Bool, _ wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            let news = state.deleted || state.info.isSoftDeleted || state.info.lastSequence > sequence || state.info.terminal != nil
            if news || (unlessCancelled && Task.isCancelled) { return false }
            state.waiters[id] = (sequence, wake)
            return true
        }
    }

    /// Forgets a waiter of `onCommit` that has not been woken.
    func stopWaiting(_ ticket: UInt64) {
        _ = state.withLock { $0.waiters.removeValue(forKey: ticket) }
    }

    /// One line for the daemon's state dump: the bounds, and where each parked cursor
    /// waits. A cursor parked after a sequence that is already committed is a lost wake-up.
    var stateDescription: String {
        state.withLock { state in
            let parked = state.waiters.values.map(\.after).sorted()
            let info = state.info
            return "stream \(name): seq \(info.firstSequence)...\(info.lastSequence), terminal \(info.terminal.map { "\($0)" } ?? "none"), "
                + "deleted \(state.deleted), subscribers \(state.subscribers), parked after \(parked)"
        }
    }

    /// Whether anyone here reads the stream live: a subscriber or group member, or a reader
    /// parked for the next commit.
    var hasLiveReaders: Bool { state.withLock { $0.subscribers > 0 || !$0.waiters.isEmpty } }

    func subscriberJoined() {
        state.withLock { $0.subscribers += 1 }
        DaemonMetrics.subscriptions.increment()
    }

    func subscriberLeft() {
        state.withLock { $0.subscribers -= 1 }
        DaemonMetrics.subscriptions.decrement()
    }
}
