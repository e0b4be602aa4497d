import ReplaySync

extension Signal where Value: Equatable {
    /// Drops a value equal to the one before it.
    ///
    /// ```swift
    /// Signal.sequence([1, 1, 2, 2, 1]).distinctUntilChanged().subscribe(next: { print($0) })  // 1 2 1
    /// ```
    public func distinctUntilChanged() -> Signal {
        Signal { observer in
            let previous = Locked<Value?>(nil)
            return self.subscribe(events: { event in
                if case .value(let value) = event {
                    // Swap under the lock, compare (user code) outside it.
                    let last = previous.withLock { previous in
                        defer { previous = value }
                        return previous
                    }
                    guard last != value else { return }
                }
                observer.send(event)
            })
        }
    }
}
