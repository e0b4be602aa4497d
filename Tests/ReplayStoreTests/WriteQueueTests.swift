import Dispatch
import Foundation
import ReplaySync
import Testing

@testable import ReplayStore

/// The writer's queue forms its batches from what waited while the last one committed:
/// all of it when it fits the limits (taken whole), else the oldest requests that fit, in
/// order, the rest left for the next batch. The first batch is held open here (a
/// semaphore, not a clock) so the others queue up behind it.
@Suite("Write queue")
struct WriteQueueTests {
    /// Runs `submitted` requests of `sizes` bytes through a queue with `limits`, all but the
    /// first submitted while the first one's batch commits; returns each batch as the
    /// indices of its requests.
    private func batches(limits: WriteQueue.Limits, sizes: [Int]) -> [[Int]] {
        let commits = HeldCommits()
        let queue = WriteQueue(limits: limits, commit: commits.commit)
        func submit(_ index: Int) {
            var payload = Data(repeating: 0, count: max(1, sizes[index]))
            payload[0] = UInt8(index)
            queue.submit(.appendWithCompletion(stream: "s", payload: payload, { _ in }))
        }
        submit(0)
        commits.untilFirstStarted()
        for index in sizes.indices.dropFirst() { submit(index) }
        commits.release()
        queue.close()
        return commits.batches
    }

    @Test func whatWaitedIsTakenWholeWhenItFits() {
        let taken = batches(limits: WriteQueue.Limits(maxRequests: 10, maxBytes: 1_000), sizes: Array(repeating: 100, count: 6))
        #expect(taken == [[0], [1, 2, 3, 4, 5]])
    }

    @Test func theRequestLimitSplitsABacklogInOrder() {
        let taken = batches(limits: WriteQueue.Limits(maxRequests: 3, maxBytes: 1 << 20), sizes: Array(repeating: 10, count: 9))
        #expect(taken == [[0], [1, 2, 3], [4, 5, 6], [7, 8]])
    }

    @Test func theByteLimitSplitsABacklogInOrder() {
        let taken = batches(limits: WriteQueue.Limits(maxRequests: 100, maxBytes: 250), sizes: Array(repeating: 100, count: 8))
        #expect(taken == [[0], [1, 2], [3, 4], [5, 6], [7]])
    }

    /// Four threads submitting while batches commit: the arrays that take turns (sealed
    /// at the limit, emptied and given back) lose nothing, repeat nothing, keep each
    /// thread's order and keep every batch within the limit.
    @Test func requestsSubmittedWhileBatchesCommitAreTakenOnceInOrderWithinTheLimit() async {
        let recorded = Locked<[[Int]]>([])
        let queue = WriteQueue(limits: WriteQueue.Limits(maxRequests: 16, maxBytes: 1 << 20)) { batch in
            let numbers = batch.map { request -> Int in
                guard case .appendWithCompletion(_, let payload, _) = request else { return -1 }
                return Int(payload[0]) << 8 | Int(payload[1])
            }
            recorded.withLock { $0.append(numbers) }
        }
        let perThread = 2_000
        await withTaskGroup(of: Void.self) { threads in
            for thread in 0..<4 {
                threads.addTask {
                    for index in 0..<perThread {
                        let number = thread * perThread + index
                        queue.submit(.appendWithCompletion(stream: "s", payload: Data([UInt8(number >> 8), UInt8(number & 0xFF)]), { _ in }))
                    }
                }
            }
        }
        queue.close()
        let batches = recorded.withLock { $0 }
        #expect(batches.allSatisfy { !$0.isEmpty && $0.count <= 16 })
        let taken = batches.flatMap { $0 }
        #expect(taken.sorted() == Array(0..<4 * perThread))
        for thread in 0..<4 {
            let own = taken.filter { $0 / perThread == thread }
            #expect(own == Array(thread * perThread..<(thread + 1) * perThread))
        }
    }

    @Test func aRequestLargerThanTheByteLimitGoesAlone() {
        let taken = batches(limits: WriteQueue.Limits(maxRequests: 100, maxBytes: 250), sizes: [100, 100, 1_000, 100])
        #expect(taken == [[0], [1], [2], [3]])
    }
}
