import Foundation

/// Runs a blocking `body` (reading a child's pipe, waiting for it to exit, a loop over raw
/// sockets) on a thread of its own, and returns its result.
///
/// Never on the cooperative pool: it has one thread per core (two here) for the whole test
/// process. `runProgram` once read a child's stdout and stderr from two detached tasks, so
/// a long child (the README tour, the crash loop) held both threads, and every other test
/// stood still for as long: under ThreadSanitizer, past a suite's two-minute time limit,
/// which looked like a subscription that never got its event.
public func blockingCall<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// `blockingCall` for a body that cannot fail.
public func blockingCall<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// Runs each job of the tasks that prefer it (`withTaskExecutorPreference`) on a thread of
/// its own, never on the cooperative pool: for a test body that calls blocking APIs
/// throughout, such as the store's, whose reads, commits and close wait for PostgreSQL.
/// Opening a store on PostgreSQL runs its migrations, each waiting for the server; a few
/// such tests at once held both pool threads for seconds, and every in-process door and
/// wait of the test process stood still past its time limit. A thread per job costs tens of
/// microseconds, which a test that talks to a database does not notice.
public final class ThreadPerJobExecutor: TaskExecutor {
    public static let shared = ThreadPerJobExecutor()

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread { job.runSynchronously(on: executor) }.start()
    }
}
