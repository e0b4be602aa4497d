extension Signal {
    /// Fails at once with `error`.
    public static func failure(_ error: any Error) -> Signal {
        Signal { observer in
            observer.sendFailed(error)
            return Disposables.empty
        }
    }
}
