import ReplaySync
import Synchronization

/// Runs a closure on the first `dispose()`, and never again.
///
/// ```swift
/// let d = ActionDisposable { print("stopped") }
/// d.dispose()   // prints "stopped"
/// d.dispose()   // prints nothing
/// ```
public final class ActionDisposable: Disposable {
    private let action: Locked<(@Sendable () -> Void)?>
    private let disposed = Atomic(false)

    public init(_ action: @escaping @Sendable () -> Void) {
        self.action = Locked(action)
    }

    public var isDisposed: Bool { disposed.load(ordering: .acquiring) }

    public func dispose() {
        // Take the closure out under the lock, run it outside: it may dispose other things.
        let action = self.action.withLock { action in
            defer { action = nil }
            return action
        }
        disposed.store(true, ordering: .releasing)
        action?()
    }
}
