extension Signal {
    /// Sends each element of `values`, then completes.
    public static func sequence(_ values: some Sequence<Value> & Sendable) -> Signal {
        Signal { observer in
            for value in values {
                guard !observer.isStopped else { break }
                observer.send(value)
            }
            observer.sendCompleted()
            return Disposables.empty
        }
    }
}
