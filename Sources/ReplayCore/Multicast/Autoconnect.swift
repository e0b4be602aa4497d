import ReplaySync

/// Counts the subscribers of an autoconnected signal and owns the current connection.
final class Autoconnect: Sendable {
    private struct State {
        var count = 0
        var connection: SerialDisposable?
    }

    private let connect: @Sendable () -> any Disposable
    private let state = Locked(State())

    init(connect: @escaping @Sendable () -> any Disposable) {
        self.connect = connect
    }

    /// Adds a subscriber, connecting if it is the first; returns its (idempotent) release.
    func retain() -> @Sendable () -> Void {
        let connection = state.withLock { state -> SerialDisposable? in
            state.count += 1
            guard state.count == 1 else { return nil }
            let connection = SerialDisposable()
            state.connection = connection
            return connection
        }
        if let connection { connection.inner = connect() }
        let released = ActionDisposable { [self] in release() }
        return { released.dispose() }
    }

    private func release() {
        let last = state.withLock { state -> SerialDisposable? in
            state.count -= 1
            guard state.count == 0 else { return nil }
            defer { state.connection = nil }
            return state.connection
        }
        last?.dispose()
    }
}
