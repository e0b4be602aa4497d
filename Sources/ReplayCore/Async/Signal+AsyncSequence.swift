extension Signal {
    /// The signal's values as an `AsyncSequence`: each iteration subscribes once; a
    /// failure is thrown; cancelling the iterating task disposes the subscription.
    ///
    /// ```swift
    /// for try await value in Signal.sequence([1, 2, 3]).values { print(value) }  // 1 2 3
    /// ```
    public var values: AsyncThrowingStream<Value, any Error> {
        AsyncThrowingStream { continuation in
            let subscription = self.subscribe(events: { event in
                switch event {
                case .value(let value): continuation.yield(value)
                case .failed(let error): continuation.finish(throwing: error)
                case .completed: continuation.finish()
                }
            })
            continuation.onTermination = { _ in subscription.dispose() }
        }
    }

    /// A cold signal that iterates `sequence` once per subscription, in a task; disposing
    /// the subscription cancels the task.
    ///
    /// ```swift
    /// Signal(AsyncStream { c in c.yield(1); c.finish() }).subscribe(next: { print($0) })  // 1
    /// ```
    public init<S: AsyncSequence & Sendable>(_ sequence: S) where S.Element == Value {
        self.init { observer in
            let task = Task {
                do {
                    for try await value in sequence {
                        observer.send(value)
                    }
                    observer.sendCompleted()
                } catch is CancellationError {
                    // Cancelled by disposal: the subscriber has gone; send nothing.
                } catch {
                    observer.sendFailed(error)
                }
            }
            return ActionDisposable { task.cancel() }
        }
    }
}
