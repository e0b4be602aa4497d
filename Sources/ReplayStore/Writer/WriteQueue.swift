import Dispatch
import ReplaySync

/// The one writer, with group commit: requests queue up while a transaction runs, and the
/// next transaction takes all of them (up to a batch limit). One fsync then covers the
/// whole batch, which is how acknowledged-after-commit publishing stays fast.
final class WriteQueue: Sendable {
    struct Limits: Sendable {
        var maxRequests = 8_192
        var maxBytes = 8 << 20
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

        mutating func append(_ request: WriteRequest, limits: Limits) {
            let size = request.payloadSize
            if !pending.isEmpty, pending.count >= limits.maxRequests || pendingBytes + size > limits.maxBytes { seal() }
            pending.append(request)
            pendingBytes += size
        }

        private mutating func seal() {
            swap(&spare, &pending)
            sealed.append(spare)
            spare = []
            pendingBytes = 0
        }
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "replay.store.writer", qos: .userInitiated)
    private let limits: Limits
    private let commit: @Sendable ([WriteRequest]) -> Void
    private let idle: @Sendable () -> Void

    /// - Parameters:
    ///   - commit: runs one batch in one transaction and completes its requests; always
    ///     called on the writer's own thread, never concurrently.
    ///   - idle: called on the writer's thread when it found nothing more to commit, before
    ///     any later batch.
    init(limits: Limits, commit: @escaping @Sendable ([WriteRequest]) -> Void, idle: @escaping @Sendable () -> Void = {}) {
        self.limits = limits
        self.commit = commit
        self.idle = idle
    }

    func submit(_ request: WriteRequest) {
        let (accepted, start) = state.withLock { state -> (Bool, Bool) in
            guard !state.closed else { return (false, false) }
            state.append(request, limits: limits)
            guard !state.running else { return (true, false) }
            state.running = true
            return (true, true)
        }
        guard accepted else { return request.fail(.closed) }
        if start { queue.async { self.drain() } }
    }

    /// Whether requests are waiting for the next batch.
    var hasPending: Bool {
        state.withLock { !$0.pending.isEmpty || !$0.sealed.isEmpty }
    }

    /// Refuses new requests, then waits until everything queued has been committed.
    func close() {
        state.withLock { $0.closed = true }
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
        while take(into: &batch) {
            commit(batch)
            batch.removeAll(keepingCapacity: true)
        }
        idle()
    }

    /// The most requests an emptied array keeps room for while the writer is idle: a
    /// burst's arrays (up to `maxRequests`, 104 bytes a request) are let go.
    private static let keptCapacity = 1_024

    /// Puts the next batch in `batch` (which comes emptied, its room kept for the requests
    /// after it); `false` once nothing is pending.
    private func take(into batch: inout [WriteRequest]) -> Bool {
        state.withLock { state -> Bool in
            if !state.sealed.isEmpty {
                if batch.capacity > state.spare.capacity { swap(&batch, &state.spare) }
                batch = state.sealed.removeFirst()
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
            return true
        }
    }
}
