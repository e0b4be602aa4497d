import ReplaySync

/// The receiving end of a signal: what a `Signal`'s subscribe closure sends into.
///
/// An observer enforces the event grammar: after a terminal event, or after it has been
/// disposed, every further event is dropped. The wrapped closure is never called while
/// the observer holds its lock, so an observer may send into the signal it observes.
///
/// ```swift
/// let signal = Signal<Int> { observer in
///     observer.send(1)
///     observer.sendCompleted()
///     observer.send(2)        // dropped: the signal has completed
///     return Disposables.empty
/// }
/// ```
public final class Observer<Value: Sendable>: Sendable {
    private let action: @Sendable (Event<Value>) -> Void
    // `true` once a terminal event was let through or the observer was disposed.
    private let stopped = Locked(false)
    // Runs once, right after a terminal event was delivered or on disposal.
    private let onStop: (@Sendable () -> Void)?

    /// An observer that calls `action` with every event it lets through.
    public init(_ action: @escaping @Sendable (Event<Value>) -> Void) {
        self.action = action
        self.onStop = nil
    }

    /// An observer with one closure per kind of event.
    public convenience init(
        next: (@Sendable (Value) -> Void)? = nil,
        failed: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil
    ) {
        self.init { event in
            switch event {
            case .value(let v): next?(v)
            case .failed(let error): failed?(error)
            case .completed: completed?()
            }
        }
    }

    init(action: @escaping @Sendable (Event<Value>) -> Void, onStop: @escaping @Sendable () -> Void) {
        self.action = action
        self.onStop = onStop
    }

    /// Sends one event, unless the observer has already stopped.
    public func send(_ event: Event<Value>) {
        if event.isTerminal {
            let first = stopped.withLock { stopped in
                defer { stopped = true }
                return !stopped
            }
            guard first else { return }
            action(event)
            onStop?()
        } else {
            guard !isStopped else { return }
            action(event)
        }
    }

    public func send(_ value: Value) { send(.value(value)) }
    public func sendCompleted() { send(.completed) }
    public func sendFailed(_ error: any Error) { send(.failed(error)) }

    /// `true` once a terminal event went through or the subscription was disposed.
    public var isStopped: Bool { stopped.withLock { $0 } }

    /// Stops the observer without a terminal event (the subscriber went away).
    func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        if first { onStop?() }
    }
}
