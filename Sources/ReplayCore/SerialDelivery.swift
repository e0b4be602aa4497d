import ReplaySync

/// Delivers events to one observer one at a time and in the order they were enqueued,
/// without ever calling the observer while a lock is held.
///
/// Whoever enqueues into an idle delivery becomes its drainer and delivers until the queue
/// is empty; anyone enqueueing meanwhile (another thread, or the observer itself sending
/// re-entrantly) only appends. This serialises concurrent senders without blocking them
/// on each other's observers, and a re-entrant send cannot deadlock.
final class SerialDelivery<Value: Sendable>: Sendable {
    private struct State {
        var queue = FIFO<Event<Value>>()
        var draining: Bool
    }

    private let state: Locked<State>
    private let observer: Observer<Value>

    /// - Parameter owned: start in the draining state, for a caller that first delivers
    ///   something else (a replay) and then calls `drain()` to hand over to the queue.
    init(_ observer: Observer<Value>, owned: Bool = false) {
        self.observer = observer
        self.state = Locked(State(draining: owned))
    }

    /// Appends an event; returns `true` if the caller must now call `drain()`.
    /// Cheap and lock-only, so it may be called while holding another lock.
    func enqueue(_ event: Event<Value>) -> Bool {
        state.withLock { state in
            state.queue.append(event)
            guard !state.draining else { return false }
            state.draining = true
            return true
        }
    }

    /// Enqueues and, if this call made the delivery busy, drains it.
    func send(_ event: Event<Value>) {
        if enqueue(event) { drain() }
    }

    /// Delivers directly; only valid for the owner of a delivery made with `owned: true`.
    func deliverOwned(_ event: Event<Value>) {
        observer.send(event)
    }

    var isStopped: Bool { observer.isStopped }

    /// Delivers queued events until the queue is empty, then marks the delivery idle.
    func drain() {
        while true {
            let next = state.withLock { state -> Event<Value>? in
                if let event = state.queue.popFirst() { return event }
                state.draining = false
                return nil
            }
            guard let event = next else { return }
            observer.send(event)
        }
    }
}

/// A first-in first-out queue with amortised O(1) `popFirst`.
struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == storage.count }
    var count: Int { storage.count - head }

    mutating func append(_ element: Element) { storage.append(element) }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64 && head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    var first: Element? { isEmpty ? nil : storage[head] }

    subscript(offset: Int) -> Element { storage[head + offset] }
}
