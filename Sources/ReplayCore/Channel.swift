/// Two connected terminals (E20): what is sent into one comes out of the other's
/// subscribers, both ways. The following terminal keeps the latest value it was sent, so
/// a subscriber of the leading terminal gets the current value at once (two-way binding).
///
/// ```swift
/// let channel = Channel<String>()
/// channel.following.subscribe(next: { print("model:", $0) })
/// channel.leading.subscribe(next: { print("view:", $0) })
/// channel.leading.send("typed")       // prints "model: typed"
/// channel.following.send("loaded")    // prints "view: loaded"
/// ```
public final class Channel<Value: Sendable>: Sendable {
    /// One end of a channel: send into it, subscribe to what the other end sends.
    public struct Terminal: SubjectProtocol {
        fileprivate let incoming: any SubjectProtocol<Value>
        fileprivate let outgoing: any SubjectProtocol<Value>

        public func send(_ event: Event<Value>) { outgoing.send(event) }
        public var signal: Signal<Value> { incoming.signal }
    }

    public let leading: Terminal
    public let following: Terminal

    public init() {
        let leadingToFollowing = ReplaySubject<Value>(capacity: 0)
        let followingToLeading = ReplaySubject<Value>(capacity: 1)
        leading = Terminal(incoming: followingToLeading, outgoing: leadingToFollowing)
        following = Terminal(incoming: leadingToFollowing, outgoing: followingToLeading)
    }
}
