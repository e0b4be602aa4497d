extension Signal {
    /// Sends everything this signal sends, then, once it completed, subscribes to `next`.
    ///
    /// ```swift
    /// Signal.just(1).concat(.just(2)).subscribe(next: { print($0) })  // 1 2
    /// ```
    public func concat(_ next: Signal) -> Signal {
        Signal { observer in
            let current = SerialDisposable()
            current.inner = self.subscribe(events: { event in
                if case .completed = event {
                    current.inner = next.subscribe(observer)
                } else {
                    observer.send(event)
                }
            })
            return current
        }
    }

    /// Subscribes to each signal in turn, after the previous one completed.
    public static func concat(_ signals: [Signal]) -> Signal {
        signals.reduce(Signal.empty) { $0.concat($1) }
    }
}
