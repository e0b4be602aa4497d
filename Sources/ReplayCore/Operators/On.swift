extension Signal {
    /// Runs side effects as events pass, without changing them. `terminated` runs after a
    /// terminal event or on disposal, once.
    public func on(
        subscribed: (@Sendable () -> Void)? = nil,
        value: (@Sendable (Value) -> Void)? = nil,
        failed: (@Sendable (any Error) -> Void)? = nil,
        completed: (@Sendable () -> Void)? = nil,
        terminated: (@Sendable () -> Void)? = nil
    ) -> Signal {
        Signal { observer in
            subscribed?()
            let once = ActionDisposable { terminated?() }
            let subscription = self.subscribe(events: { event in
                switch event {
                case .value(let v): value?(v)
                case .failed(let error): failed?(error)
                case .completed: completed?()
                }
                observer.send(event)
                if event.isTerminal { once.dispose() }
            })
            return CompositeDisposable([subscription, once])
        }
    }
}
