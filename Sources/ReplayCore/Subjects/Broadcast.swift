import ReplaySync

/// The machinery shared by `Subject` and `ReplaySubject`: a buffer that commits events,
/// and subscribers that receive the committed ones in sequence order.
///
/// Ordering: the buffer's sequence numbers are the one order. Commits may be reported out
/// of order (by concurrent senders, or by a store's writer); they are held in `pending`
/// until contiguous. Each subscriber has its own `SerialDelivery`, filled under the lock
/// and drained outside it, so no observer runs while the lock is held.
///
/// A late subscriber is registered with `replayThrough = lastCommitted`: it reads entries
/// up to that number from the buffer (outside the lock), and every later entry is queued
/// for it meanwhile. The switch from replay to live therefore has no gap and no duplicate.
final class Broadcast<Value: Sendable>: Sendable {
    private struct Subscriber {
        let id: UInt64
        let delivery: SerialDelivery<Value>
        let replayThrough: UInt64
    }

    private struct State {
        var lastCommitted: UInt64
        var pending: [UInt64: ReplayEntry<Value>] = [:]
        // In subscription order: everyone receives an event in the order they subscribed.
        var subscribers: [Subscriber] = []
        var nextID: UInt64 = 0
        var terminated = false
    }

    /// Entries read from the buffer per page when replaying to a late subscriber.
    static var replayPageSize: Int { 256 }

    let buffer: any ReplayBuffer<Value>
    private let state: Locked<State>

    init(buffer: any ReplayBuffer<Value>) {
        self.buffer = buffer
        self.state = Locked(State(lastCommitted: buffer.lastCommittedSequence))
    }

    func send(
        _ event: Event<Value>,
        completion: (@Sendable (Result<ReplayEntry<Value>, any Error>) -> Void)? = nil
    ) {
        buffer.append(event) { [self] result in
            if case .success(let entry) = result { committed(entry) }
            completion?(result)
        }
    }

    private func committed(_ entry: ReplayEntry<Value>) {
        let toDrain = state.withLock { state -> [SerialDelivery<Value>] in
            guard entry.sequence > state.lastCommitted else { return [] }
            state.pending[entry.sequence] = entry
            var ready: [ReplayEntry<Value>] = []
            while let next = state.pending.removeValue(forKey: state.lastCommitted + 1) {
                state.lastCommitted = next.sequence
                ready.append(next)
            }
            guard !ready.isEmpty else { return [] }
            var toDrain: [SerialDelivery<Value>] = []
            for subscriber in state.subscribers {
                var mustDrain = false
                for entry in ready where entry.sequence > subscriber.replayThrough {
                    if subscriber.delivery.enqueue(entry.event) { mustDrain = true }
                }
                if mustDrain { toDrain.append(subscriber.delivery) }
            }
            if ready.contains(where: { $0.event.isTerminal }) {
                // Everyone has the terminal event queued; nothing more will come.
                state.terminated = true
                state.subscribers = []
            }
            return toDrain
        }
        for delivery in toDrain { delivery.drain() }
    }

    func subscribe(_ observer: Observer<Value>) -> any Disposable {
        let delivery = SerialDelivery(observer, owned: true)
        let (id, replayThrough) = state.withLock { state -> (UInt64?, UInt64) in
            guard !state.terminated else { return (nil, state.lastCommitted) }
            let id = state.nextID
            state.nextID += 1
            state.subscribers.append(
                Subscriber(id: id, delivery: delivery, replayThrough: state.lastCommitted))
            return (id, state.lastCommitted)
        }
        replay(through: replayThrough, to: delivery)
        delivery.drain()
        guard let id else { return Disposables.empty }
        return ActionDisposable { [weak self] in
            self?.state.withLock { $0.subscribers.removeAll { $0.id == id } }
        }
    }

    private func replay(through last: UInt64, to delivery: SerialDelivery<Value>) {
        var from: UInt64 = 1
        while from <= last, !delivery.isStopped {
            let page: [ReplayEntry<Value>]
            do {
                page = try buffer.read(from: from, through: last, limit: Self.replayPageSize)
            } catch {
                delivery.deliverOwned(.failed(error))
                return
            }
            for entry in page { delivery.deliverOwned(entry.event) }
            guard page.count == Self.replayPageSize, let lastRead = page.last else { return }
            from = lastRead.sequence + 1
        }
    }
}
