extension Signal {
    /// Sends `value` first, then everything this signal sends.
    public func start(with value: Value) -> Signal {
        Signal.just(value).concat(self)
    }
}
