extension Signal {
    /// Lets through only the values for which `isIncluded` returns true.
    ///
    /// ```swift
    /// Signal.sequence([1, 2, 3, 4]).filter { $0 % 2 == 0 }.subscribe(next: { print($0) })  // 2 4
    /// ```
    public func filter(_ isIncluded: @escaping @Sendable (Value) -> Bool) -> Signal {
        Signal { observer in
            self.subscribe(events: { event in
                if case .value(let value) = event, !isIncluded(value) { return }
                observer.send(event)
            })
        }
    }
}
