extension Signal {
    /// Never sends anything.
    public static var never: Signal {
        Signal { _ in Disposables.empty }
    }
}
