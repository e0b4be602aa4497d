extension Signal {
    /// Transforms every value.
    ///
    /// ```swift
    /// Signal.sequence([1, 2, 3]).map { $0 * 10 }.subscribe(next: { print($0) })  // 10 20 30
    /// ```
    public func map<U: Sendable>(_ transform: @escaping @Sendable (Value) -> U) -> Signal<U> {
        Signal<U> { observer in
            self.subscribe(events: { observer.send($0.map(transform)) })
        }
    }
}
