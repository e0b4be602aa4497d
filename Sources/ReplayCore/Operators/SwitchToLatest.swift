import ReplaySync

extension Signal {
    /// Follows only the newest inner signal: when a new one arrives, the previous one is
    /// disposed. Completes when the outer signal and the current inner one have completed.
    ///
    /// ```swift
    /// searches.map { text in search(text) }.switchToLatest()   // results of the last query only
    /// ```
    public func switchToLatest<Inner: Sendable>() -> Signal<Inner> where Value == Signal<Inner> {
        Signal<Inner> { observer in
            let output = SerialDelivery(observer)
            let state = Locked(SwitchState())
            let current = SerialDisposable()
            let outer = self.subscribe(events: { event in
                switch event {
                case .value(let inner):
                    let id = state.withLock { state -> UInt64 in
                        state.latest += 1
                        state.innerActive = true
                        return state.latest
                    }
                    current.inner = inner.subscribe(events: { event in
                        let isLatest = state.withLock { $0.latest == id }
                        guard isLatest else { return }
                        guard case .completed = event else { return output.send(event) }
                        let done = state.withLock { state -> Bool in
                            state.innerActive = false
                            return state.outerDone
                        }
                        if done { output.send(.completed) }
                    })
                case .failed(let error):
                    output.send(.failed(error))
                case .completed:
                    let done = state.withLock { state -> Bool in
                        state.outerDone = true
                        return !state.innerActive
                    }
                    if done { output.send(.completed) }
                }
            })
            return CompositeDisposable([outer, current])
        }
    }
}

private struct SwitchState: Sendable {
    var latest: UInt64 = 0
    var innerActive = false
    var outerDone = false
}
