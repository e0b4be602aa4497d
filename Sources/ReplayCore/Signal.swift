/// A cold signal: a recipe that runs its work once per subscription.
///
/// Made from a "did subscribe" closure that receives an observer and returns the
/// disposable that cancels the work (the articles' `createSignal`). Every operator returns
/// a new cold signal that subscribes to its source only when it is itself subscribed.
///
/// ```swift
/// let numbers = Signal<Int> { observer in
///     observer.send(1); observer.send(2); observer.send(3)
///     observer.sendCompleted()
///     return Disposables.action { print("stopped") }
/// }
/// numbers.subscribe(next: { print($0) }, completed: { print("done") })
/// // prints 1, 2, 3, done, stopped
/// ```
///
/// The disposable returned by the closure runs exactly once: after the terminal event,
/// or when the subscription is disposed, whichever comes first.
public struct Signal<Value: Sendable>: Sendable {
    private let didSubscribe: @Sendable (Observer<Value>) -> any Disposable

    public init(_ didSubscribe: @escaping @Sendable (Observer<Value>) -> any Disposable) {
        self.didSubscribe = didSubscribe
    }

    /// Runs the signal's work for `observer`. Disposing the result stops delivery and
    /// cancels the work.
    @discardableResult
    public func subscribe(_ observer: Observer<Value>) -> any Disposable {
        let resources = SerialDisposable()
        let gate = Observer<Value>(
            action: { observer.send($0) },
            onStop: { resources.dispose() }
        )
        // If the work terminated synchronously, `resources` is disposed already and
        // disposes the returned disposable as soon as it is set.
        resources.inner = didSubscribe(gate)
        return ActionDisposable { gate.stop() }
    }

    /// Subscribes with one closure per kind of event.
    @discardableResult
    public func subscribe(
        next: (@Sendable (Value) -> Void)? = nil,
        failed: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil
    ) -> any Disposable {
        subscribe(Observer(next: next, failed: failed, completed: completed))
    }

    /// Subscribes with one closure that receives every event.
    @discardableResult
    public func subscribe(events: @escaping @Sendable (Event<Value>) -> Void) -> any Disposable {
        subscribe(Observer(events))
    }
}
