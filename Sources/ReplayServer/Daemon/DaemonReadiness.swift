import ReplaySync

/// When the daemon serves: each door says when it listens, and whoever waits (the
/// service manager's notifier) hears once all of them do.
final class DaemonReadiness: Sendable {
    enum Door: Hashable, Sendable {
        case socket
        case http
    }

    private let waiting: Locked<Set<Door>>
    let served: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    init(doors: Set<Door>) {
        waiting = Locked(doors)
        (served, continuation) = AsyncStream.makeStream(of: Void.self)
        if doors.isEmpty { continuation.finish() }
    }

    var allListening: Bool { waiting.value.isEmpty }

    /// `door` listens; the last one to say so ends the wait.
    func listening(_ door: Door) {
        let all = waiting.withLock { waiting in
            waiting.remove(door)
            return waiting.isEmpty
        }
        if all { continuation.finish() }
    }
}
