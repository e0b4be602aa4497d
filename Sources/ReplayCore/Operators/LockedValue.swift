import Synchronization

/// A value behind a mutex, shareable across the closures of one subscription.
final class LockedValue<State: Sendable>: Sendable {
    private let mutex: Mutex<State>

    init(_ initial: State) {
        mutex = Mutex(initial)
    }

    func withLock<R: Sendable>(_ body: (inout State) throws -> R) rethrows -> R {
        try mutex.withLock { try body(&$0) }
    }
}
