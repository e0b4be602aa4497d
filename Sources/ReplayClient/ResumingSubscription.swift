import ReplayProtocol

/// A subscription that survives daemon restarts: when the connection drops it reconnects,
/// with exponential backoff, and resumes from the last sequence number seen + 1, so the
/// consumer sees every retained event once, in order.
///
/// ```swift
/// for try await event in ResumingSubscription(stream: "orders") { handle(event) }
/// ```
public struct ResumingSubscription: AsyncSequence, Sendable {
    public typealias Element = ReplayEvent

    public let socketPath: String
    public let stream: String
    public let start: StartPosition
    /// First and longest wait between reconnection attempts, in seconds.
    public let initialBackoff: Double
    public let maxBackoff: Double
    /// Called with each error that caused a reconnection.
    public let onReconnect: (@Sendable (any Error) -> Void)?

    public init(
        socketPath: String = ReplayClient.defaultSocketPath, stream: String, from start: StartPosition = .all,
        initialBackoff: Double = 0.05, maxBackoff: Double = 5, onReconnect: (@Sendable (any Error) -> Void)? = nil
    ) {
        self.socketPath = socketPath
        self.stream = stream
        self.start = start
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.onReconnect = onReconnect
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(configuration: self)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let configuration: ResumingSubscription
        var client: ReplayClient?
        var events: ReplaySubscription.Iterator?
        var lastSeen: UInt64?
        var reconnection: Reconnection

        init(configuration: ResumingSubscription) {
            self.configuration = configuration
            self.reconnection = Reconnection(
                initialBackoff: configuration.initialBackoff, maxBackoff: configuration.maxBackoff, onReconnect: configuration.onReconnect)
        }

        public mutating func next() async throws -> ReplayEvent? {
            while true {
                try Task.checkCancellation()
                do {
                    if events == nil { try await resubscribe() }
                    guard let event = try await events?.next() else { return nil }
                    reconnection.succeeded()
                    if let lastSeen, event.sequence <= lastSeen { continue }
                    lastSeen = event.sequence
                    return event
                } catch {
                    try await reconnection.recover(from: error, closing: client)
                    (client, events) = (nil, nil)
                }
            }
        }

        private mutating func resubscribe() async throws {
            let client = try await ReplayClient.connect(to: configuration.socketPath)
            self.client = client
            let start: StartPosition = lastSeen.map { .from($0 + 1) } ?? configuration.start
            events = try await client.subscribe(configuration.stream, from: start).makeAsyncIterator()
        }

    }
}
