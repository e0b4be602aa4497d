/// How a resuming reader (`ResumingSubscription`, `ResumingGroupConsumer`) gets over a lost
/// daemon: which errors a new connection cures, and the exponential backoff between tries.
struct Reconnection: Sendable {
    let initialBackoff: Double
    let maxBackoff: Double
    let onReconnect: (@Sendable (any Error) -> Void)?
    private var backoff: Double

    init(initialBackoff: Double, maxBackoff: Double, onReconnect: (@Sendable (any Error) -> Void)?) {
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.onReconnect = onReconnect
        self.backoff = initialBackoff
    }

    /// A read went through: the next loss waits the shortest time again.
    mutating func succeeded() {
        backoff = initialBackoff
    }

    /// If `error` is a lost or absent daemon: closes `client`, waits, and returns; anything
    /// else (a refusal) is thrown on.
    mutating func recover(from error: any Error, closing client: ReplayClient?) async throws {
        switch error {
        case ReplayClientError.disconnected, ReplayClientError.daemonNotRunning: break
        default: throw error
        }
        onReconnect?(error)
        await client?.close()
        try? await Task.sleep(for: .seconds(backoff))
        backoff = Swift.min(maxBackoff, backoff * 2)
    }
}
