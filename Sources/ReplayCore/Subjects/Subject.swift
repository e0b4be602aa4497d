/// A hot signal you send into by hand: subscribers get what is sent while they listen.
///
/// A late subscriber misses earlier values but still receives the terminal event if the
/// subject has already ended (so it does not wait forever).
///
/// ```swift
/// let subject = Subject<String>()
/// subject.subscribe(next: { print("1:", $0) })
/// subject.send("package 1")                       // prints "1: package 1"
/// subject.subscribe(next: { print("2:", $0) })
/// subject.send("package 2")                       // prints "1: package 2", "2: package 2"
/// ```
public final class Subject<Value: Sendable>: SubjectProtocol {
    private let broadcast = Broadcast<Value>(buffer: RingBuffer(capacity: 0))

    public init() {}

    public func send(_ event: Event<Value>) {
        broadcast.send(event)
    }

    public var signal: Signal<Value> {
        let broadcast = self.broadcast
        return Signal { observer in broadcast.subscribe(observer) }
    }
}
