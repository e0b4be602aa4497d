import DequeModule
import ReplayCore

/// The events of one subscription between the connection and the consumer: unbounded in
/// principle, bounded in practice because the connection stops reading from the socket
/// while the buffer is above its high watermark (and the daemon then stops sending).
final class EventBuffer: Sendable {
    enum Item: Sendable {
        case event(ReplayEvent)
        case gap(ClosedRange<UInt64>)
    }

    private struct State {
        var items = Deque<Item>()
        var end: Result<Void, ReplayClientError>?
        var waiter: CheckedContinuation<Item?, any Error>?
        var paused = false
    }

    static let highWatermark = 2048
    static let lowWatermark = 512

    private let state = Locked(State())
    /// Called with `true` to stop reading the socket, `false` to resume.
    private let pause: @Sendable (Bool) -> Void

    init(pause: @escaping @Sendable (Bool) -> Void) {
        self.pause = pause
    }

    func push(_ item: Item) {
        let (waiter, mustPause) = state.withLock { state -> (CheckedContinuation<Item?, any Error>?, Bool) in
            if let waiter = state.waiter {
                state.waiter = nil
                return (waiter, false)
            }
            state.items.append(item)
            guard !state.paused, state.items.count > Self.highWatermark else { return (nil, false) }
            state.paused = true
            return (nil, true)
        }
        waiter?.resume(returning: item)
        if mustPause { pause(true) }
    }

    func finish(_ end: Result<Void, ReplayClientError>) {
        let waiter = state.withLock { state -> CheckedContinuation<Item?, any Error>? in
            guard state.end == nil else { return nil }
            state.end = end
            defer { state.waiter = nil }
            return state.waiter
        }
        switch end {
        case .success: waiter?.resume(returning: nil)
        case .failure(let error): waiter?.resume(throwing: error)
        }
    }

    /// The next item; `nil` at a normal end; throws at a failure.
    func next() async throws -> Item? {
        try await withCheckedThrowingContinuation { continuation in
            let (ready, resume): (Result<Item?, any Error>?, Bool) = state.withLock { state in
                if let item = state.items.popFirst() {
                    let resume = state.paused && state.items.count < Self.lowWatermark
                    if resume { state.paused = false }
                    return (.success(item), resume)
                }
                switch state.end {
                case .success: return (.success(nil), false)
                case .failure(let error): return (.failure(error), false)
                case nil:
                    state.waiter = continuation
                    return (nil, false)
                }
            }
            if resume { pause(false) }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
