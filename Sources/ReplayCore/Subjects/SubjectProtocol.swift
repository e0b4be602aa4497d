/// A hot signal you send into by hand; what `multicast` turns a cold signal into.
public protocol SubjectProtocol<Value>: Sendable {
    associatedtype Value: Sendable

    /// Sends an event to the current subscribers (and, for a replay subject, records it).
    func send(_ event: Event<Value>)

    /// The subject as a signal: each subscription joins the subject's subscribers.
    var signal: Signal<Value> { get }
}

extension SubjectProtocol {
    public func send(_ value: Value) { send(.value(value)) }
    public func sendCompleted() { send(.completed) }
    public func sendFailed(_ error: any Error) { send(.failed(error)) }

    /// An observer that forwards everything into this subject (to subscribe it to a source).
    public var observer: Observer<Value> {
        Observer { self.send($0) }
    }

    @discardableResult
    public func subscribe(
        next: (@Sendable (Value) -> Void)? = nil,
        failed: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil
    ) -> any Disposable {
        signal.subscribe(next: next, failed: failed, completed: completed)
    }
}
