import ReplaySync

extension Signal {
    /// Sends the values of all `signals` as they come; completes when all have completed,
    /// fails as soon as one fails.
    ///
    /// ```swift
    /// Signal.merge([.just(1), .just(2)]).subscribe(next: { print($0) })  // 1 2
    /// ```
    public static func merge(_ signals: [Signal]) -> Signal {
        Signal<Signal>.sequence(signals).flatten()
    }

    /// Merges this signal with `other`.
    public func merge(with other: Signal) -> Signal {
        .merge([self, other])
    }

    /// Maps each value to a signal and merges those signals (the articles' `flattenMap`
    /// and `bind`).
    ///
    /// ```swift
    /// Signal.sequence([1, 2]).flatMap { Signal.sequence([$0, $0 * 10]) }
    ///     .subscribe(next: { print($0) })  // 1 10 2 20
    /// ```
    public func flatMap<U: Sendable>(_ transform: @escaping @Sendable (Value) -> Signal<U>) -> Signal<U> {
        map(transform).flatten()
    }

    /// The articles' name for `flatMap`.
    public func flattenMap<U: Sendable>(_ transform: @escaping @Sendable (Value) -> Signal<U>) -> Signal<U> {
        flatMap(transform)
    }

    /// RAC's primitive behind `flattenMap`: each value is bound to a signal, and the
    /// signals are merged. Here the same as `flatMap`.
    public func bind<U: Sendable>(_ transform: @escaping @Sendable (Value) -> Signal<U>) -> Signal<U> {
        flatMap(transform)
    }

    /// Merges a signal of signals: subscribes to every inner signal as it arrives.
    public func flatten<Inner: Sendable>() -> Signal<Inner> where Value == Signal<Inner> {
        Signal<Inner> { observer in
            let merge = MergeState(SerialDelivery(observer))
            merge.disposables.add(
                self.subscribe(events: { event in
                    switch event {
                    case .value(let inner): merge.subscribe(inner)
                    case .failed(let error): merge.output.send(.failed(error))
                    case .completed: merge.finishOne()
                    }
                }))
            return merge.disposables
        }
    }
}

/// The shared state of one merge subscription: the live inner subscriptions and how many
/// signals (the outer one included) have yet to complete.
private final class MergeState<Inner: Sendable>: Sendable {
    let output: SerialDelivery<Inner>
    let disposables = CompositeDisposable()
    private let active = Locked(1)

    init(_ output: SerialDelivery<Inner>) {
        self.output = output
    }

    func subscribe(_ inner: Signal<Inner>) {
        active.withLock { $0 += 1 }
        let subscription = SerialDisposable()
        let token = disposables.add(subscription)
        subscription.inner = inner.subscribe(events: { [self] event in
            if case .completed = event {
                if let token { disposables.remove(token) }
                finishOne()
            } else {
                output.send(event)
            }
        })
    }

    func finishOne() {
        if active.withLock({
            $0 -= 1; return $0 == 0
        }) {
            output.send(.completed)
        }
    }
}
