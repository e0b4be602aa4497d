import ReplaySync

/// The source runs in progress (each a task around one swift-subprocess run), so that
/// shutdown can wait until every stopped source's process group is gone: a cancelled run
/// tears its group down asynchronously (SIGTERM, SIGKILL after the grace period), and a
/// daemon that exited first would leave it running beside the next one.
final class SourceRuns: Sendable {
    private struct State {
        var next: UInt64 = 0
        var running: [UInt64: Task<Void, Never>] = [:]
        /// Runs that ended before their task was recorded.
        var ended: Set<UInt64> = []
    }

    private let state = Locked(State())

    /// Starts `body` as a tracked run; cancel the task to stop it.
    func start(_ body: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        let id = state.withLock { state in
            defer { state.next += 1 }
            return state.next
        }
        let task = Task { [state] in
            await body()
            state.withLock { state in
                if state.running.removeValue(forKey: id) == nil { state.ended.insert(id) }
            }
        }
        state.withLock { state in
            if state.ended.remove(id) == nil { state.running[id] = task }
        }
        return task
    }

    /// Returns once no run is in progress.
    func waitForAll() async {
        while let task = state.withLock({ $0.running.values.first }) {
            await task.value
        }
    }
}
