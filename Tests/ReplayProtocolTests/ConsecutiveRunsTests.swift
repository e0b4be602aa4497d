import ReplayModel
import Testing

/// A hand-out's sequence numbers cut into runs of consecutive numbers.
@Suite("Consecutive runs")
struct ConsecutiveRunsTests {
    @Test func ascendingNumbersSplitWhereAGapIs() {
        #expect([UInt64]().consecutiveRuns.isEmpty)
        #expect([UInt64(7)].consecutiveRuns == [7...7])
        #expect([UInt64(1), 2, 3, 5, 6, 9].consecutiveRuns == [1...3, 5...6, 9...9])
        #expect([UInt64.max - 1, .max].consecutiveRuns == [(.max - 1)...(.max)])
    }
}
