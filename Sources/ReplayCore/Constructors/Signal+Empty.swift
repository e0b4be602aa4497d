extension Signal {
    /// Completes at once.
    public static var empty: Signal {
        Signal { observer in
            observer.sendCompleted()
            return Disposables.empty
        }
    }
}
