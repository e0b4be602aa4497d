import ServiceLifecycle

/// How a live read's wait ended.
enum LiveWait {
    case committed
    case timedOut
    /// The daemon is shutting down: end the response now rather than hold the shutdown.
    case shuttingDown

    /// Waits for a commit after the cursor's position, at most `timeout`.
    static func wait(_ cursor: HTTPCursor, timeout: Duration) async -> LiveWait {
        await wait(for: { await cursor.waitForCommit() }, timeout: timeout)
    }

    /// Waits for `commit` to return, at most `timeout`.
    static func wait(for commit: @escaping @Sendable () async -> Void, timeout: Duration) async -> LiveWait {
        await withTaskGroup(of: LiveWait.self) { group in
            group.addTask {
                await commit()
                return .committed
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return .timedOut
            }
            group.addTask {
                try? await gracefulShutdown()
                return Task.isCancelled ? .timedOut : .shuttingDown
            }
            let first = await group.next() ?? .timedOut
            group.cancelAll()
            return first
        }
    }
}
