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
