import Dispatch
import ReplaySync

/// The one writer, with group commit: requests queue up while a transaction runs, and the
/// next transaction takes all of them (up to a batch limit). One fsync then covers the
/// whole batch, which is how acknowledged-after-commit publishing stays fast.
///
/// **Round trips are gathered.** A client with one request in flight (an HTTP append)
/// sends its next only once answered, so the appends answered by one commit are not among
/// those waiting for the next: with 16 such clients, commits alternate between two
/// cohorts of about seven, and each pays a commit's fixed work (SQLite's locks, the WAL
/// write, the flush's CPU) for half the clients. When everything waiting is such an
/// append and fewer wait than the last commit answered plus those that waited behind it,
/// the writer waits for the rest, as PostgreSQL's `commit_delay` does when other
/// transactions are open: at most `Limits.maxGather`, and right after a commit no longer
/// than that commit took. The cohorts merge into one, a commit answers them all, and the
/// next commit waits for them to come back. A wait that runs out (a client stopped, or thinks
/// between requests) turns the wait off for the next `gathersSkippedAfterAMiss` commits,
/// so clients that do not come back at once pay it rarely. Nothing is answered before its
/// commit, so durability is as before.
///
/// Why no longer than the commit before: while the writer waits, nothing overlaps its
/// commit with the event loops' reading of the next requests, as two cohorts did. With 16
/// clients, waits of up to 1 ms whatever the commit took left the machine a quarter idle,
/// and idempotent producers (more for the loops to read per request) lost 2–4 % of their
/// rate; capped at the commit's time, their rate is as it was. An idle writer (the last
/// commit took every client, and nothing waits behind it) has no commit to overlap, and
/// waits up to the limit: capped there too, the first client back was committed alone,
/// and the clients split into two cohorts again.
final class WriteQueue: Sendable {
    struct Limits: Sendable {
        var maxRequests = 8_192
        var maxBytes = 8 << 20
        /// The longest the writer waits for round trips it expects (see above), in
        /// nanoseconds, however long its last commit took. The C server of
        /// docs/PERFORMANCE.md's HTTP table waits as long.
        var maxGather: UInt64 = 1_000_000
    }

    private struct State {
        /// In arrival order, within the limits. A batch that takes all of it (the usual
        /// case) swaps the array out whole, so each request moves into its batch: taking
        /// them one by one copied every request once more, a retain and a release of each
        /// of its references, a twentieth of the daemon's CPU when eight connections
        /// publish pipelined.
        var pending: [WriteRequest] = []
        /// The payload bytes of `pending`, kept as requests arrive, so that the limits are
        /// known without walking the requests.
        var pendingBytes = 0
        /// Whole batches ahead of `pending`, oldest first: a request that would take
        /// `pending` past a limit seals it here and starts the next. Cut out of one longer
        /// array instead, a batch copied each of its requests and moved the rest to the
        /// front, under the lock the event loops submit through (with eight publishers of
        /// 4,096 PUBs a write, 5 % of the writer's time).
        var sealed: [[WriteRequest]] = []
        /// An emptied batch's array, the room the next `pending` starts in.
        var spare: [WriteRequest] = []
        var running = false
        var closed = false

        /// Of `pending`, the requests whose clients wait for them before sending another
        /// (`WriteRequest.isRoundTrip`).
        var pendingRoundTrips = 0
        /// The round trips in the batch being committed.
        var takenRoundTrips = 0
        /// How many round trips the next batch is expected to hold: those the last commit
        /// answered and those that waited behind it.
        var expectedRoundTrips = 0
        /// When the last commit ended (the writer's clock).
        var committedAt: UInt64 = 0
        /// While the writer waits for the round trips it expects.
        var gathering = false
        /// How long the last wait could last, in nanoseconds.
        var gatherLimit: UInt64 = 0
        /// Commits still to be taken at once after a wait ran out.
        var gathersToSkip = 0

        mutating func append(_ request: WriteRequest, limits: Limits) {
            let size = request.payloadSize
            if !pending.isEmpty, pending.count >= limits.maxRequests || pendingBytes + size > limits.maxBytes { seal() }
            pending.append(request)
            pendingBytes += size
            if request.isRoundTrip { pendingRoundTrips += 1 }
        }

        /// Whether `request`, just appended, ends a gather: it is not a round trip (its
        /// client may be waiting on more than this), or the round trips expected are here,
        /// or a batch was sealed.
        mutating func endsGather(_ request: WriteRequest) -> Bool {
            guard gathering, !request.isRoundTrip || pendingRoundTrips >= expectedRoundTrips || !sealed.isEmpty else { return false }
            gathering = false
            return true
        }

        /// Starts a wait for more round trips if everything pending is one and fewer are
        /// here than expected, and answers how long it may last. `took`: the batch taken
        /// last has just committed, in that time; `nil`: the writer was idle, and waits up
        /// to `limit`, as nothing else is in flight for the wait to hold back. The clients
        /// a commit answered longer than `limit` ago are not expected: they would have come
        /// back.
        mutating func beginsGather(afterACommitThatTook took: UInt64?, now: UInt64, limit: UInt64) -> UInt64? {
            if took != nil {
                expectedRoundTrips = takenRoundTrips + pendingRoundTrips
                committedAt = now
            } else if now &- committedAt > limit {
                expectedRoundTrips = 0
            }
            guard !closed, sealed.isEmpty, !pending.isEmpty, pendingRoundTrips == pending.count,
                pendingRoundTrips < expectedRoundTrips
            else { return nil }
            guard gathersToSkip == 0 else {
                gathersToSkip -= 1
                return nil
            }
            gathering = true
            gatherLimit = took.map { min(limit, $0) } ?? limit
            return gatherLimit
        }

        private mutating func seal() {
            swap(&spare, &pending)
            sealed.append(spare)
            spare = []
            pendingBytes = 0
            pendingRoundTrips = 0
        }
    }

    /// Commits taken at once after a gather's wait ran out.
    static let gathersSkippedAfterAMiss = 8

    private let state = Locked(State())
    /// Signalled when a gather ends before its time (`State.endsGather`, `close`).
    private let arrivals = LockCondition()
    private let queue = DispatchQueue(label: "replay.store.writer", qos: .userInitiated)
    private let limits: Limits
    private let commit: @Sendable ([WriteRequest]) -> Void
    private let idle: @Sendable () -> Void
    /// Monotonic nanoseconds: how long commits take, and how long ago the last ended.
    private let clock: @Sendable () -> UInt64

    /// - Parameters:
    ///   - commit: runs one batch in one transaction and completes its requests; always
    ///     called on the writer's own thread, never concurrently.
    ///   - idle: called on the writer's thread when it found nothing more to commit, before
    ///     any later batch.
    ///   - clock: monotonic nanoseconds (tests give a virtual one).
    init(
        limits: Limits, commit: @escaping @Sendable ([WriteRequest]) -> Void, idle: @escaping @Sendable () -> Void = {},
        clock: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }
    ) {
        self.limits = limits
        self.commit = commit
        self.idle = idle
        self.clock = clock
    }

    func submit(_ request: WriteRequest) {
        let (accepted, start, wake) = state.withLock { state -> (Bool, Bool, Bool) in
            guard !state.closed else { return (false, false, false) }
            state.append(request, limits: limits)
            guard !state.running else { return (true, false, state.endsGather(request)) }
            state.running = true
            return (true, true, false)
        }
        guard accepted else { return request.fail(.closed) }
        if start { queue.async { self.drain() } }
        if wake { arrivals.signal() }
    }

    /// Whether requests are waiting for the next batch.
    var hasPending: Bool {
        state.withLock { !$0.pending.isEmpty || !$0.sealed.isEmpty }
    }

    /// Whether the writer is waiting for round trips, how long its last wait could last,
    /// and how many commits it still takes at once after a wait ran out (for tests).
    var gather: (waiting: Bool, limit: UInt64, skipped: Int) {
        state.withLock { ($0.gathering, $0.gatherLimit, $0.gathersToSkip) }
    }

    /// Refuses new requests, then waits until everything queued has been committed.
    func close() {
        state.withLock { state in
            state.closed = true
            state.gathering = false
        }
        arrivals.signal()
        // Any drain was scheduled before `closed` was set, so it is ahead of this block.
        queue.sync {}
    }

    /// Runs on the writer queue: batch after batch until nothing is pending. A request
    /// submitted after the last batch was taken schedules the next drain behind this one,
    /// so `idle` always comes before it.
    ///
    /// Arrays take turns: requests arrive in one while another is committed, and the
    /// committed one, emptied, is where later requests arrive. Made afresh for each batch,
    /// and again for the requests after it, they were two allocations a commit, which a
    /// one-at-a-time publish pays whole; grown from empty on the event loops, under the
    /// lock, they were reallocated at every doubling.
    private func drain() {
        var batch: [WriteRequest] = []
        var took: UInt64?
        while take(into: &batch, afterACommitThatTook: took) {
            let started = clock()
            commit(batch)
            took = clock() &- started
            batch.removeAll(keepingCapacity: true)
        }
        idle()
    }

    /// The most requests an emptied array keeps room for while the writer is idle: a
    /// burst's arrays (up to `maxRequests`, 104 bytes a request) are let go.
    private static let keptCapacity = 1_024

    /// Puts the next batch in `batch` (which comes emptied, its room kept for the requests
    /// after it); `false` once nothing is pending. Waits first for the round trips
    /// expected, if that is all that waits (see the type's notes).
    private func take(into batch: inout [WriteRequest], afterACommitThatTook took: UInt64?) -> Bool {
        let now = clock()
        if let wait = state.withLock({ $0.beginsGather(afterACommitThatTook: took, now: now, limit: limits.maxGather) }) {
            state.wait(for: arrivals, while: \.gathering, atMost: wait)
        }
        return state.withLock { state -> Bool in
            if state.gathering {
                state.gathering = false
                state.gathersToSkip = Self.gathersSkippedAfterAMiss
            }
            if !state.sealed.isEmpty {
                if batch.capacity > state.spare.capacity { swap(&batch, &state.spare) }
                batch = state.sealed.removeFirst()
                state.takenRoundTrips = 0
                return true
            }
            guard !state.pending.isEmpty else {
                state.running = false
                if state.pending.capacity > Self.keptCapacity { state.pending = [] }
                if batch.capacity > state.pending.capacity, batch.capacity <= Self.keptCapacity { swap(&batch, &state.pending) }
                state.spare = []
                return false
            }
            swap(&batch, &state.pending)
            state.pendingBytes = 0
            state.takenRoundTrips = state.pendingRoundTrips
            state.pendingRoundTrips = 0
            return true
        }
    }
}
