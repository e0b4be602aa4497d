extension Signal {
    /// On failure, continues with the signal `handler` makes from the error.
    ///
    /// ```swift
    /// Signal<Int>.failure(Oops()).catch { _ in .just(0) }.subscribe(next: { print($0) })  // 0
    /// ```
    public func `catch`(_ handler: @escaping @Sendable (any Error) -> Signal) -> Signal {
        Signal { observer in
            let current = SerialDisposable()
            current.inner = self.subscribe(events: { event in
                if case .failed(let error) = event {
                    current.inner = handler(error).subscribe(observer)
                } else {
                    observer.send(event)
                }
            })
            return current
        }
    }
}
