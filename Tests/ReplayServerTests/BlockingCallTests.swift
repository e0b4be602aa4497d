import Foundation
import ReplayTesting
import Testing

/// The test harness never holds the cooperative pool while a child runs: with one pool
/// thread per core for the whole test process, a harness that blocked it stalled every
/// other test (a hang under ThreadSanitizer that looked like a lost event).
@Suite("Test harness: blocking calls", .timeLimit(.minutes(1)))
struct BlockingCallTests {
    /// More children than the pool has threads, each waiting (at most 10 s) for a file that
    /// only a task on the pool can create. If running them held the pool, that task could
    /// not run until they gave up, and they would exit 1.
    @Test func childrenRunWhileThePoolStaysFree() async throws {
        try await withTemporaryDirectory { directory in
            let flag = directory + "/flag"
            let wait = "for i in $(seq 1 500); do [ -e '\(flag)' ] && exit 0; sleep 0.02; done; exit 1"
            let children = ProcessInfo.processInfo.activeProcessorCount + 1
            let statuses = try await withThrowingTaskGroup(of: Int32.self) { group in
                for _ in 0..<children {
                    group.addTask { try await runProgram("/bin/sh", ["-c", wait]).status }
                }
                try await Task.sleep(for: .milliseconds(200))
                _ = FileManager.default.createFile(atPath: flag, contents: nil)
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 0, count: children))
        }
    }
}
