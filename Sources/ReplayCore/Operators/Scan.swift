import ReplaySync

extension Signal {
    /// Sends the running accumulation of the values (the articles' `scanWithStart:reduce:`).
    ///
    /// ```swift
    /// Signal.sequence([1, 2, 3]).scan(start: 0, +).subscribe(next: { print($0) })  // 1 3 6
    /// ```
    public func scan<State: Sendable>(
        start: State,
        reduce: @escaping @Sendable (State, Value) -> State
    ) -> Signal<State> {
        Signal<State> { observer in
            let state = Locked(start)
            return self.subscribe(events: { event in
                observer.send(
                    event.map { value in
                        // A source sends one event at a time, so read-reduce-write cannot
                        // interleave; `reduce` (user code) runs outside the lock.
                        let next = reduce(state.withLock { $0 }, value)
                        state.withLock { $0 = next }
                        return next
                    })
            })
        }
    }
}
