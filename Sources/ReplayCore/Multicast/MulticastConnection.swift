import ReplaySync

/// A cold source shared through a subject: the source runs once per connection, and every
/// subscriber of `signal` shares that run.
///
/// ```swift
/// let connection = fetchData.multicast(ReplaySubject())
/// connection.signal.subscribe(next: { print("a", $0) })
/// connection.signal.subscribe(next: { print("b", $0) })
/// connection.connect()     // fetchData runs once; prints "a …", "b …"
/// ```
public final class MulticastConnection<Value: Sendable>: Sendable {
    private let source: Signal<Value>
    private let subject: any SubjectProtocol<Value>
    private let connection = Locked<SerialDisposable?>(nil)

    public init(source: Signal<Value>, subject: any SubjectProtocol<Value>) {
        self.source = source
        self.subject = subject
    }

    /// The shared signal: subscribing does not start the source; `connect()` does.
    public var signal: Signal<Value> { subject.signal }

    /// Subscribes the subject to the source, once, however many times it is called.
    /// Returns the disposable of that one connection; disposing it stops the source.
    @discardableResult
    public func connect() -> any Disposable {
        let (disposable, isFirst) = connection.withLock { connection in
            if let existing = connection { return (existing, false) }
            let created = SerialDisposable()
            connection = created
            return (created, true)
        }
        if isFirst { disposable.inner = subscribeSubjectToSource() }
        return disposable
    }

    /// A signal that connects on its first subscriber, disposes the source subscription
    /// when the last subscriber leaves, and connects again for the next one.
    ///
    /// ```swift
    /// let shared = ticks.multicast(Subject()).autoconnect()
    /// let a = shared.subscribe(next: { print($0) })   // ticks starts
    /// a.dispose()                                       // ticks stops
    /// ```
    public func autoconnect() -> Signal<Value> {
        let refCount = Autoconnect(connect: subscribeSubjectToSource)
        let signal = self.signal
        return Signal { observer in
            // Join the subject first, so values sent synchronously on connect are seen.
            let subscription = signal.subscribe(observer)
            let release = refCount.retain()
            return ActionDisposable {
                subscription.dispose()
                release()
            }
        }
    }

    private func subscribeSubjectToSource() -> any Disposable {
        source.subscribe(subject.observer)
    }
}
