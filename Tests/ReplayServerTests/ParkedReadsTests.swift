import NIOCore
import NIOEmbedded
import Testing

@testable import ReplayServer
@testable import ReplayStore

/// The live reads' deadlines in 10 ms slots behind one scheduled task, on virtual time: a
/// wait ends at its deadline or within a slot after it, never before; a wait that ends
/// otherwise leaves nothing behind; a shorter wait parked after a longer one still ends
/// on time; and a shutdown ends every parked wait, and each later one at once. Each
/// count is required before a wait's outcome is awaited: a wait that did not end would
/// hold the test (the time limit is for anything else that would).
@Suite("ParkedReads", .timeLimit(.minutes(1)))
struct ParkedReadsTests {
    let loop = NIOAsyncTestingEventLoop()
    let parked: ParkedReads

    init() {
        parked = ParkedReads(loop: loop)
    }

    /// A wait on a quiet stream, started in a task of its own and parked before this returns.
    private func park(_ hub: StreamHub, _ timeout: Duration, expecting count: Int) async -> Task<LiveWait, Never> {
        let parked = self.parked
        let task = Task { await LiveWait.wait(on: (hub, 10), timeout: timeout, parked: parked) }
        while parked.count < count { await Task.yield() }
        return task
    }

    @Test func aWaitEndsAtItsDeadlineOrWithinASlotAfterItNeverBefore() async throws {
        let hub = StreamHubTests.hub()
        let wait = await park(hub, .seconds(1), expecting: 1)
        await loop.advanceTime(by: .milliseconds(999))
        #expect(parked.count == 1, "not before its deadline")
        await loop.advanceTime(by: .milliseconds(11))
        try #require(parked.count == 0)
        #expect(await wait.value == .timedOut)
        #expect(hub.stateDescription.hasSuffix("parked after []"))
    }

    @Test func aShorterWaitParkedAfterALongerOneEndsOnTime() async throws {
        let hub = StreamHubTests.hub()
        let long = await park(hub, .seconds(10), expecting: 1)
        let short = await park(hub, .seconds(1), expecting: 2)
        await loop.advanceTime(by: .milliseconds(1_010))
        try #require(parked.count == 1, "the shorter one ended, the longer one waits on")
        #expect(await short.value == .timedOut)
        await loop.advanceTime(by: .seconds(9))
        try #require(parked.count == 0)
        #expect(await long.value == .timedOut)
    }

    @Test func waitsEndedByACommitLeaveNothingAndTheOthersStillEndOnTime() async throws {
        let busy = StreamHubTests.hub()
        let quiet = StreamHubTests.hub()
        // The committed ones hold the earliest slot, which the scheduled task is for.
        let woken = [await park(busy, .milliseconds(500), expecting: 1), await park(busy, .milliseconds(500), expecting: 2)]
        let later = await park(quiet, .seconds(2), expecting: 3)
        busy.apply(CommitBatch.Change(info: StreamHubTests.info(first: 1, last: 11), appended: StreamHubTests.events(11...11)))
        for wait in woken { #expect(await wait.value == .committed) }
        #expect(parked.count == 1)
        await loop.advanceTime(by: .milliseconds(600))
        #expect(parked.count == 1, "the task for the emptied slot ended nothing")
        await loop.advanceTime(by: .milliseconds(1_410))
        try #require(parked.count == 0)
        #expect(await later.value == .timedOut)
    }

    @Test func aShutdownEndsEveryParkedWaitAndEachLaterOneAtOnce() async throws {
        let hub = StreamHubTests.hub()
        let first = await park(hub, .seconds(600), expecting: 1)
        let second = await park(hub, .seconds(30), expecting: 2)
        parked.shutDown()
        #expect(await first.value == .shuttingDown)
        #expect(await second.value == .shuttingDown)
        #expect(await LiveWait.wait(on: (hub, 10), timeout: .seconds(600), parked: parked) == .shuttingDown)
        #expect(parked.count == 0)
        #expect(hub.stateDescription.hasSuffix("parked after []"))
    }
}
