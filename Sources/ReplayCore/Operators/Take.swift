import ReplaySync

extension Signal {
    /// Sends values until `trigger` sends a value or completes, then completes.
    ///
    /// ```swift
    /// ticks.take(until: stop).subscribe(completed: { print("stopped") })
    /// ```
    public func take<Trigger: Sendable>(until trigger: Signal<Trigger>) -> Signal {
        Signal { observer in
            let output = SerialDelivery(observer)
            let disposables = CompositeDisposable()
            disposables.add(
                trigger.subscribe(events: { event in
                    switch event {
                    case .value, .completed: output.send(.completed)
                    case .failed: break
                    }
                }))
            disposables.add(self.subscribe(events: { output.send($0) }))
            return disposables
        }
    }

    /// Sends the first `count` values, then completes.
    public func take(first count: Int) -> Signal {
        guard count > 0 else { return .empty }
        return Signal { observer in
            let taken = Locked(0)
            return self.subscribe(events: { event in
                guard case .value = event else { return observer.send(event) }
                let n = taken.withLock {
                    $0 += 1; return $0
                }
                if n <= count { observer.send(event) }
                if n == count { observer.sendCompleted() }
            })
        }
    }
}
