import ReplaySync

/// A windowed subscription's credit (`SUB … window=<n>`, `MORE <sid> <n>`): how many more
/// events its cursor may send before the client grants more. The cursor takes credit
/// before each page and gives back what the page did not use; at zero it parks here, with
/// its position, and nothing else on the connection waits for it.
final class SubscriptionCredit: Sendable {
    private struct State {
        var available: Int
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: Locked<State>

    init(window: Int) {
        state = Locked(State(available: window))
    }

    var available: Int { state.withLock { $0.available } }

    /// Takes up to `limit` events' credit, waiting while there is none; 0 once cancelled.
    func take(upTo limit: Int) async -> Int {
        while true {
            let taken = state.withLock { state -> Int in
                let taken = min(limit, state.available)
                state.available -= taken
                return taken
            }
            if taken > 0 || Task.isCancelled { return taken }
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let wake = state.withLock { state -> Bool in
                        // Cancelled before the waiter is stored: the handler found none.
                        if state.available > 0 || Task.isCancelled { return true }
                        state.waiter = continuation
                        return false
                    }
                    if wake { continuation.resume() }
                }
            } onCancel: {
                state.withLock { state in
                    defer { state.waiter = nil }
                    return state.waiter
                }?.resume()
            }
        }
    }

    /// Credit taken and not used (the page was shorter), or granted by MORE.
    func give(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { state in
            state.available += count
            defer { state.waiter = nil }
            return state.waiter
        }?.resume()
    }
}
