import NIOPosix

/// Threads for blocking SQLite reads, so that neither event loops nor the cooperative pool
/// ever wait on the disk.
struct ReadPool: Sendable {
    let pool: NIOThreadPool

    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await pool.runIfActive(body)
    }
}
