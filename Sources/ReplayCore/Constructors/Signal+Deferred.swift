extension Signal {
    /// Makes the signal only when subscribed, once per subscription (the articles' `defer`).
    public static func deferred(_ make: @escaping @Sendable () -> Signal) -> Signal {
        Signal { observer in make().subscribe(observer) }
    }
}
