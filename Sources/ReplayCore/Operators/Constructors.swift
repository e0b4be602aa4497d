/// Signals made from nothing but a value, an error or a closure.
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

    /// Completes at once.
    public static var empty: Signal {
        Signal { observer in
            observer.sendCompleted()
            return Disposables.empty
        }
    }

    /// Never sends anything.
    public static var never: Signal {
        Signal { _ in Disposables.empty }
    }

    /// Fails at once with `error`.
    public static func failure(_ error: any Error) -> Signal {
        Signal { observer in
            observer.sendFailed(error)
            return Disposables.empty
        }
    }

    /// Makes the signal only when subscribed, once per subscription (the articles' `defer`).
    public static func deferred(_ make: @escaping @Sendable () -> Signal) -> Signal {
        Signal { observer in make().subscribe(observer) }
    }

    /// Sends `value` after `delay` seconds on `scheduler`, then completes.
    public static func after(_ delay: Double, on scheduler: any DateScheduler, value: Value) -> Signal {
        Signal { observer in
            scheduler.after(delay) {
                observer.send(value)
                observer.sendCompleted()
            }
        }
    }
}
