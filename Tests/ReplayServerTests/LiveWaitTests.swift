import Testing

@testable import ReplayServer
@testable import ReplayStore

/// A live HTTP read's wait: one continuation raced by the hub's wake-up, a timer and
/// cancellation, with no task of its own. Whichever comes first decides, and the others
/// leave nothing behind: a waiter left in the hub after every keep-alive round would be
/// a leak per reader per round.
@Suite("LiveWait")
struct LiveWaitTests {
    let parked = ParkedReads()

    @Test(arguments: 0..<50)
    func aCommitDuringTheWaitEndsItAsCommitted(round: Int) async {
        let hub = StreamHubTests.hub()
        async let outcome = LiveWait.wait(on: (hub, 10), timeout: .seconds(600), parked: parked)
        if round.isMultiple(of: 2) { await Task.yield() }
        hub.apply(CommitBatch.Change(info: StreamHubTests.info(first: 1, last: 11), appended: StreamHubTests.events(11...11)))
        #expect(await outcome == .committed)
        #expect(hub.stateDescription.hasSuffix("parked after []"))
        #expect(parked.count == 0)
    }

    @Test func aWaitBehindTheTailOrOnAnEndedStreamEndsAtOnce() async {
        #expect(await LiveWait.wait(on: (StreamHubTests.hub(), 9), timeout: .seconds(600), parked: parked) == .committed)
        let ended = StreamHubTests.hub()
        ended.apply(CommitBatch.Change(info: StreamHubTests.info(first: 1, last: 10, terminal: .completed), appended: []))
        #expect(await LiveWait.wait(on: (ended, 10), timeout: .seconds(600), parked: parked) == .committed)
    }

    @Test func aQuietStreamTimesOutAndLeavesNoWaiterInTheHub() async {
        let hub = StreamHubTests.hub()
        for _ in 0..<3 {
            #expect(await LiveWait.wait(on: (hub, 10), timeout: .milliseconds(1), parked: parked) == .timedOut)
        }
        #expect(hub.stateDescription.hasSuffix("parked after []"))
    }

    @Test func cancellationEndsTheWaitAndLeavesNoWaiterInTheHub() async {
        let hub = StreamHubTests.hub()
        let task = Task { await LiveWait.wait(on: (hub, 10), timeout: .seconds(600), parked: parked) }
        task.cancel()
        #expect(await task.value == .timedOut)
        #expect(hub.stateDescription.hasSuffix("parked after []"))
        #expect(parked.count == 0)
    }
}
