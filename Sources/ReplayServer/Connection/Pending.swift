import ReplayCore

/// A value that arrives later, from any thread, awaited by one task. Not an
/// `EventLoopPromise`: the value may never come (the connection closed first), which NIO
/// reports as a leaked promise.
final class Pending<Value: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<Value, Never>?)
        case done(Value)
    }

    private let state = Locked(State.waiting(nil))

    init() {}

    init(_ value: Value) {
        state.withLock { $0 = .done(value) }
    }

    func fulfil(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard case .waiting(let waiter) = state else { return nil }
            state = .done(value)
            return waiter
        }
        waiter?.resume(returning: value)
    }

    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Value? in
                    switch state {
                    case .done(let value): return value
                    case .waiting: state = .waiting(continuation); return nil
                    }
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
