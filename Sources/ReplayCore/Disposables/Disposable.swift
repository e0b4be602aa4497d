/// Something that can be cancelled: a subscription, a scheduled action, a connection.
///
/// `dispose()` is idempotent and thread-safe: only the first call has an effect.
public protocol Disposable: Sendable {
    func dispose()
    var isDisposed: Bool { get }
}

/// Factories for the common disposables.
public enum Disposables {
    /// A disposable with nothing to cancel.
    public static var empty: any Disposable { ActionDisposable {} }

    /// A disposable that runs `action` once, on its first `dispose()`.
    public static func action(_ action: @escaping @Sendable () -> Void) -> any Disposable {
        ActionDisposable(action)
    }
}
