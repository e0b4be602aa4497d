import Foundation
import Testing

/// The suite runs a bounded number of tests at once (Sources/CReplayTesting/test_parallelism.c): without the
/// bound, every test of the process starts together and the end-to-end ones time out on two
/// cores. The bound is in the environment before Swift Testing reads it.
@Suite("The suite's own parallelism")
struct SuiteParallelismTests {
    @Test func aBoundedNumberOfTestsRunAtOnce() throws {
        let width = try #require(ProcessInfo.processInfo.environment["SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"])
        let bound = try #require(Int(width), "a number: \(width)")
        #expect(bound >= 1 && bound < 1_000, "\(bound) tests at once")
    }
}
