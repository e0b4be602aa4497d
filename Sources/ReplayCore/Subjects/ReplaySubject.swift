/// A subject that keeps the last `capacity` values, and its terminal event, and gives them
/// to every new subscriber before the live ones.
///
/// ```swift
/// let subject = ReplaySubject<String>(capacity: 1)
/// subject.send("A"); subject.send("B"); subject.send("C")
/// subject.subscribe(next: { print($0) })   // prints "C"
/// subject.send("D")                          // prints "D"
/// ```
///
/// What is kept lives in a `ReplayBuffer`: memory by default, or a durable store. The
/// subject delivers an event to live subscribers only once its buffer has committed it,
/// in the buffer's sequence order, whatever thread sends.
public final class ReplaySubject<Value: Sendable>: SubjectProtocol {
    private let broadcast: Broadcast<Value>

    /// A replay subject over an in-memory ring buffer. `capacity: nil` keeps everything.
    public convenience init(capacity: Int? = nil) {
        self.init(buffer: RingBuffer(capacity: capacity))
    }

    /// A replay subject over any buffer, such as a stream of the SQLite store.
    public init(buffer: any ReplayBuffer<Value>) {
        self.broadcast = Broadcast(buffer: buffer)
    }

    /// The buffer behind the subject.
    public var buffer: any ReplayBuffer<Value> { broadcast.buffer }

    public func send(_ event: Event<Value>) {
        broadcast.send(event)
    }

    /// Sends an event and reports when the buffer has committed it (with its sequence
    /// number), or why it refused it.
    public func send(
        _ event: Event<Value>,
        completion: @escaping @Sendable (Result<ReplayEntry<Value>, any Error>) -> Void
    ) {
        broadcast.send(event, completion: completion)
    }

    public var signal: Signal<Value> {
        let broadcast = self.broadcast
        return Signal { observer in broadcast.subscribe(observer) }
    }
}
