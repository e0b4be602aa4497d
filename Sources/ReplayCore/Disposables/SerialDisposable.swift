import ReplaySync

/// Holds one disposable at a time: setting a new one disposes the previous one.
/// Used where a subscription is replaced, as in `switchToLatest`.
///
/// ```swift
/// let serial = SerialDisposable()
/// serial.inner = Disposables.action { print("first") }
/// serial.inner = Disposables.action { print("second") }   // prints "first"
/// serial.dispose()                                         // prints "second"
/// ```
public final class SerialDisposable: Disposable {
    private struct State {
        var inner: (any Disposable)?
        var disposed = false
    }

    private let state = Locked(State())

    public init(_ inner: (any Disposable)? = nil) {
        state.withLock { $0.inner = inner }
    }

    public var isDisposed: Bool { state.withLock { $0.disposed } }

    /// The current disposable. Once this is disposed, anything set is disposed at once.
    public var inner: (any Disposable)? {
        get { state.withLock { $0.inner } }
        set {
            let previous: (any Disposable)? = state.withLock { state in
                if state.disposed { return newValue }
                defer { state.inner = newValue }
                return state.inner
            }
            previous?.dispose()
        }
    }

    public func dispose() {
        let inner = state.withLock { state -> (any Disposable)? in
            guard !state.disposed else { return nil }
            state.disposed = true
            defer { state.inner = nil }
            return state.inner
        }
        inner?.dispose()
    }
}
