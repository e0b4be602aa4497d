import ReplaySync

/// A value that arrives later, from any thread, awaited by one task: the connection's one
/// way to wait for something done elsewhere (a subscription's start from the writer or the
/// read pool, its `+OK` written by the event loop). Not an `EventLoopPromise`: the value may
/// never come (the connection closed first), which NIO reports as a leaked promise.
final class Pending<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Value?, Never>?)
        case done(Value)
    }

    private let state = Locked(State.waiting(nil))

    init() {}

    init(_ value: Value) {
        state.withLock { $0 = .done(value) }
    }

    func fulfil(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
            guard case .waiting(let waiter) = state else { return nil }
            state = .done(value)
            return waiter
        }
        waiter?.resume(returning: value)
    }

    /// The value, however long it takes: for what must be answered even if the task is
    /// cancelled meanwhile (a reply slot waits on it).
    var value: Value {
        get async { await arrival()! }
    }

    /// The value, or `nil` once the task is cancelled.
    func valueUnlessCancelled() async -> Value? {
        await withTaskCancellationHandler {
            await arrival(unlessCancelled: true)
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Value?, Never>? in
                guard case .waiting(let waiter) = state else { return nil }
                state = .waiting(nil)
                return waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    private func arrival(unlessCancelled: Bool = false) async -> Value? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Value?? in
                switch state {
                case .done(let value): return .some(value)
                case .waiting:
                    if unlessCancelled, Task.isCancelled { return .some(nil) }
                    state = .waiting(continuation)
                    return nil
                }
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
