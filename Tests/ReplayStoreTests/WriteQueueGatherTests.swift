import Dispatch
import Foundation
import ReplaySync
import Testing

@testable import ReplayStore

/// Round trips (appends whose clients wait for their answers, as an HTTP POST's do) are
/// gathered: when all that waits is round trips and fewer than the last commit answered
/// plus those behind it, the writer waits for the rest. The first commit is held open by
/// a semaphore so that the others queue behind it; the tests wait for the writer's state,
/// never for a time.
@Suite("Write queue: gathering round trips")
struct WriteQueueGatherTests {
    /// A queue whose batches are recorded as the numbers of their requests, the first
    /// commit held until `release`.
    private final class Writer: Sendable {
        let queue: WriteQueue
        private let recorded = Locked<[[Int]]>([])
        private let started = DispatchSemaphore(value: 0)
        private let gate = DispatchSemaphore(value: 0)

        init(maxGather: UInt64) {
            let recorded = recorded, started = started, gate = gate
            queue = WriteQueue(limits: WriteQueue.Limits(maxGather: maxGather)) { batch in
                let numbers = batch.map { request -> Int in
                    switch request {
                    case .streamWrite(let write, _): Int(write.payloads[0][0])
                    case .appendWithCompletion(_, let payload, _): Int(payload[0])
                    default: -1
                    }
                }
                let first = recorded.withLock { recorded in
                    recorded.append(numbers)
                    return recorded.count == 1
                }
                if first {
                    started.signal()
                    gate.wait()
                }
            }
        }

        /// A round trip: an HTTP append's request.
        func post(_ number: Int) {
            queue.submit(.streamWrite(StreamWrite(stream: "s", payloads: [Data([UInt8(number)])]), { _ in }))
        }

        /// A PUB's request, whose client does not wait for it.
        func publish(_ number: Int) {
            queue.submit(.appendWithCompletion(stream: "s", payload: Data([UInt8(number)]), { _ in }))
        }

        /// Submits `number` and holds its commit until `release`.
        func holdFirstCommit(post number: Int) {
            post(number)
            started.wait()
        }

        /// Publishes `number` and holds its commit until `release`.
        func holdFirstCommit(publish number: Int) {
            publish(number)
            started.wait()
        }

        /// Returns once `count` batches have committed.
        func until(batches count: Int) {
            while batches.count < count { usleep(1_000) }
        }

        func release() { gate.signal() }

        /// Returns once the writer waits for round trips (a bounded look, not a clock).
        func untilGathering() async -> Bool {
            for _ in 0..<20_000 {
                if queue.gather.waiting { return true }
                await Task.yield()
                usleep(100)
            }
            return false
        }

        var batches: [[Int]] { recorded.withLock { $0 } }
    }

    /// Three clients: one is answered while two wait behind it. The writer waits for the
    /// answered one to come back and commits the three together, where it would have
    /// committed two and then one.
    @Test func theClientsAnsweredByACommitAreWaitedFor() async {
        let writer = Writer(maxGather: 60_000_000_000)
        writer.holdFirstCommit(post: 0)
        writer.post(1)
        writer.post(2)
        writer.release()
        #expect(await writer.untilGathering())
        writer.post(3)
        writer.queue.close()
        #expect(writer.batches == [[0], [1, 2, 3]])
        #expect(writer.queue.gather.skipped == 0)
    }

    /// A request that is not a round trip (a pipelined PUB) ends the wait at once: its
    /// client may be waiting on more than this one request.
    @Test func anythingButARoundTripEndsTheWait() async {
        let writer = Writer(maxGather: 60_000_000_000)
        writer.holdFirstCommit(post: 0)
        writer.post(1)
        writer.release()
        #expect(await writer.untilGathering())
        writer.publish(2)
        writer.queue.close()
        #expect(writer.batches == [[0], [1, 2]])
        #expect(writer.queue.gather.skipped == 0)
    }

    /// The answered client does not come back: the wait runs out, what waits is committed,
    /// and the next gathers are skipped so that such clients pay the wait rarely.
    @Test func aWaitThatRunsOutTakesWhatIsThereAndSkipsTheNextGathers() {
        let writer = Writer(maxGather: 1_000_000)
        writer.holdFirstCommit(post: 0)
        writer.post(1)
        writer.release()
        writer.until(batches: 2)
        writer.queue.close()
        #expect(writer.batches == [[0], [1]])
        #expect(writer.queue.gather.skipped == WriteQueue.gathersSkippedAfterAMiss)
    }

    /// Clients answered longer than a gather ago would have come back already: a request
    /// arriving at an idle writer after that is committed at once.
    @Test func clientsAnsweredLongerAgoThanAGatherAreNotWaitedFor() {
        let writer = Writer(maxGather: 1_000_000)
        writer.holdFirstCommit(publish: 0)
        writer.post(1)
        writer.post(2)
        writer.release()
        writer.until(batches: 2)
        usleep(20_000)  // more than the 1 ms a gather may take, so the answers are old
        writer.post(3)
        writer.until(batches: 3)
        writer.queue.close()
        #expect(writer.batches == [[0], [1, 2], [3]])
        #expect(writer.queue.gather.skipped == 0)
    }

    /// PUBs alone are never waited for, however many round trips the last commit answered
    /// (a wait would run out, and count as a miss).
    @Test func publishesAreNeverWaitedFor() {
        let writer = Writer(maxGather: 1_000_000)
        writer.holdFirstCommit(post: 0)
        writer.publish(1)
        writer.publish(2)
        writer.release()
        writer.until(batches: 2)
        writer.queue.close()
        #expect(writer.batches == [[0], [1, 2]])
        #expect(writer.queue.gather == (false, 0))
    }
}
