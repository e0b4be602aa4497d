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
        /// In arrival order. A batch that takes all of it (the usual case) swaps the array
        /// out whole, so each request moves into its batch: taking them one by one copied
        /// every request once more, a retain and a release of each of its references, a
        /// twentieth of the daemon's CPU when eight connections publish pipelined.
        var pending: [WriteRequest] = []
        /// The payload bytes of `pending`, kept as requests arrive, so that a batch which
        /// fits is known without walking the requests.
        var pendingBytes = 0
        var running = false
        var closed = false
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
            state.pending.append(request)
            state.pendingBytes += request.payloadSize
            guard !state.running else { return (true, false) }
            state.running = true
            return (true, true)
        }
        guard accepted else { return request.fail(.closed) }
        if start { queue.async { self.drain() } }
    }

    /// Whether requests are waiting for the next batch.
    var hasPending: Bool {
        state.withLock { !$0.pending.isEmpty }
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
    /// Two arrays take turns: requests arrive in one while the other is committed, and
    /// the committed one, emptied, is where the next requests arrive. Made afresh for each
    /// batch, and again for the next requests, they were two allocations a commit, which a
    /// one-at-a-time publish pays whole; grown from empty on the event loops, under the lock,
    /// they were reallocated at every doubling.
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

    /// Swaps the next batch into `batch` (empty), whose room the next requests then arrive
    /// in; `false` once nothing is pending.
    private func take(into batch: inout [WriteRequest]) -> Bool {
        state.withLock { state -> Bool in
            guard !state.pending.isEmpty else {
                state.running = false
                if state.pending.capacity > Self.keptCapacity { state.pending = [] }
                if batch.capacity > state.pending.capacity, batch.capacity <= Self.keptCapacity { swap(&batch, &state.pending) }
                return false
            }
            if state.pending.count <= limits.maxRequests, state.pendingBytes <= limits.maxBytes || state.pending.count == 1 {
                swap(&batch, &state.pending)
                state.pendingBytes = 0
                return true
            }
            // Over a limit: the first requests within it (at least one); the rest wait for
            // the next batch, moved to the front of the array.
            var count = 0
            var bytes = 0
            for index in state.pending.indices {
                let size = state.pending[index].payloadSize
                guard count < limits.maxRequests, count == 0 || bytes + size <= limits.maxBytes else { break }
                count += 1
                bytes += size
            }
            batch.append(contentsOf: state.pending[..<count])
            state.pending.removeFirst(count)
            state.pendingBytes -= bytes
            return true
        }
    }
}
