/// The ways of turning a cold signal hot (E8 of the articles).
extension Signal {
    /// Shares this signal through `subject`; nothing runs until `connect()`.
    public func multicast(_ subject: any SubjectProtocol<Value>) -> MulticastConnection<Value> {
        MulticastConnection(source: self, subject: subject)
    }

    /// `multicast(Subject())`: late subscribers miss what was sent before they came.
    public func publish() -> MulticastConnection<Value> {
        multicast(Subject())
    }

    /// Connects now, through an unbounded replay subject: every subscriber, however late,
    /// gets the whole history. The work runs once, at once, whether or not anyone listens.
    ///
    /// ```swift
    /// let shared = request.replay()     // the request runs now, once
    /// shared.subscribe(next: { print($0) })
    /// ```
    public func replay() -> Signal<Value> {
        let connection = multicast(ReplaySubject(capacity: nil))
        connection.connect()
        return connection.signal
    }

    /// Connects now, through a replay subject of capacity 1: late subscribers get only the
    /// latest value.
    public func replayLast() -> Signal<Value> {
        let connection = multicast(ReplaySubject(capacity: 1))
        connection.connect()
        return connection.signal
    }

    /// Connects on the first subscription, then stays connected; the last `capacity` values
    /// (all if `nil`) are replayed to later subscribers. The work runs once, and not before
    /// someone wants it.
    ///
    /// ```swift
    /// let hello = Signal<String> { o in print("send hello"); o.send("Hello"); return Disposables.empty }
    ///     .replayLazily(capacity: 1)
    /// hello.subscribe(next: { print($0) })   // prints "send hello", "Hello"
    /// hello.subscribe(next: { print($0) })   // prints "Hello"
    /// ```
    public func replayLazily(capacity: Int? = nil) -> Signal<Value> {
        let connection = multicast(ReplaySubject(capacity: capacity))
        let shared = connection.signal
        return Signal { observer in
            // Subscribe first: the subscriber that starts the work sees all of it live.
            let subscription = shared.subscribe(observer)
            connection.connect()
            return subscription
        }
    }
}
