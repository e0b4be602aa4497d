extension Signal {
    /// Sends `value`, then completes (the articles' `return`).
    public static func just(_ value: Value) -> Signal {
        Signal { observer in
            observer.send(value)
            observer.sendCompleted()
            return Disposables.empty
        }
    }

    /// The articles' name for `just`.
    public static func `return`(_ value: Value) -> Signal {
        just(value)
    }
}
