import Dispatch
import Foundation
import ReplaySync
import Testing

@testable import ReplayStore

/// Round trips (appends whose clients wait for their answers, as an HTTP POST's do) are
/// gathered: when all that waits is round trips and fewer than the last commit answered
/// plus those behind it, the writer waits for the rest, no longer than the last commit
/// took. The first commit is held open by a semaphore so that the others queue behind it;
/// how long commits take is on a virtual clock, and the tests wait for the writer's state,
/// never for a time.
@Suite("Write queue: gathering round trips")
struct WriteQueueGatherTests {
    /// A queue whose batches are recorded as the numbers of their requests, the first
    /// commit held until `release`.
    private final class Writer: Sendable {
        let queue: WriteQueue
        private let commits = HeldCommits()
        /// The writer's clock, in nanoseconds.
        let clock = Locked<UInt64>(1_000_000_000)

        /// - Parameter commitTakes: how far each commit moves the clock.
        init(maxGather: UInt64, commitTakes: UInt64 = 60_000_000_000) {
            let commits = commits, clock = clock
            queue = WriteQueue(
                limits: WriteQueue.Limits(maxGather: maxGather),
                commit: { batch in
                    clock.withLock { $0 += commitTakes }
                    commits.commit(batch)
                }, clock: { clock.value })
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
            commits.untilFirstStarted()
        }

        /// Publishes `number` and holds its commit until `release`.
        func holdFirstCommit(publish number: Int) {
            publish(number)
            commits.untilFirstStarted()
        }

        /// Commits a PUB, then the POSTs `posts` that waited behind it, together (a PUB's
        /// commit answers no round trips, so none is waited for); the writer is then idle,
        /// its last commit having answered all of `posts`.
        func answerTogether(posts: [Int]) {
            holdFirstCommit(publish: 0)
            for number in posts { post(number) }
            release()
            until(batches: 2)
        }

        /// Whether `count` batches have committed, looking for a while (a bound on a test
        /// gone wrong, not a measure: the batches come at once).
        @discardableResult
        func until(batches count: Int) -> Bool {
            for _ in 0..<10_000 {
                if batches.count >= count { return true }
                usleep(1_000)
            }
            return false
        }

        func release() { commits.release() }

        /// Returns once the writer waits for round trips (a bounded look, not a clock).
        func untilGathering() async -> Bool {
            for _ in 0..<20_000 {
                if queue.gather.waiting { return true }
                await Task.yield()
                usleep(100)
            }
            return false
        }

        var batches: [[Int]] { commits.batches }
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

    /// However long the writer may wait, it waits no longer than its last commit took:
    /// with commits that take no time, a wait runs out at once.
    @Test func aWaitLastsNoLongerThanTheLastCommitTook() {
        let writer = Writer(maxGather: 60_000_000_000, commitTakes: 0)
        writer.holdFirstCommit(post: 0)
        writer.post(1)
        writer.release()
        #expect(writer.until(batches: 2))
        writer.queue.close()
        #expect(writer.batches == [[0], [1]])
        #expect(writer.queue.gather.limit == 0)
        #expect(writer.queue.gather.skipped == WriteQueue.gathersSkippedAfterAMiss)
    }

    /// An idle writer, whose last commit took every client, has nothing in flight that a
    /// wait holds back: it waits for the clients up to the limit, however short the
    /// commit was.
    @Test func anIdleWriterWaitsUpToTheLimitForTheClientsItAnswered() async {
        let writer = Writer(maxGather: 60_000_000_000, commitTakes: 0)
        writer.answerTogether(posts: [1, 2])
        writer.post(3)
        #expect(await writer.untilGathering())
        #expect(writer.queue.gather.limit == 60_000_000_000)
        writer.post(4)
        #expect(writer.until(batches: 3))
        writer.queue.close()
        #expect(writer.batches == [[0], [1, 2], [3, 4]])
        #expect(writer.queue.gather.skipped == 0)
    }

    /// Clients answered longer ago than the longest wait would have come back already: a
    /// request arriving at an idle writer after that is committed at once.
    @Test func clientsAnsweredLongerAgoThanTheLongestWaitAreNotWaitedFor() {
        let writer = Writer(maxGather: 1_000_000_000)
        writer.answerTogether(posts: [1, 2])
        writer.clock.withLock { $0 += 2_000_000_000 }  // longer than the longest wait
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
        #expect(!writer.queue.gather.waiting)
        #expect(writer.queue.gather.skipped == 0)
    }
}
