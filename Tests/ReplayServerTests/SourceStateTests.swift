import Dispatch
import Foundation
import ReplayCore
import Testing

@testable import ReplayServer
@testable import ReplayStore

/// A source supervisor's decisions, without a process, a store or a clock: every
/// transition of `SourceState` alone.
@Suite("SourceState")
struct SourceStateTests {
    static let now = DispatchTime(uptimeNanoseconds: 1_000_000_000_000)

    static func armed() -> SourceState.Armed {
        let connection = Signal<Data>.never.multicast(Subject<Data>())
        return SourceState.Armed(connection: connection, autoconnected: connection.autoconnect())
    }

    static func state(shared: Bool = false) -> SourceState {
        var state = SourceState(shared: shared)
        let active = state.activate(terminal: nil)
        #expect(active)
        state.arm(armed())
        return state
    }

    @Test func anEndedStreamIsNotActivated() {
        var state = SourceState(shared: false)
        let active = state.activate(terminal: .completed)
        #expect(!active)
        #expect(state.status == .ended(.completed))
        let action = state.connect(now: Self.now)
        #expect(action == .nothing)
    }

    @Test func connectingAsksForTheClaimThenRunsOnALocalDatabase() {
        var state = Self.state()
        let action1 = state.connect(now: Self.now)
        #expect(action1 == .askForClaim)
        let action2 = state.connect(now: Self.now, claimGranted: true)
        #expect(action2 == .run(watch: false))
        #expect(state.claim == .held(startsAfter: nil))
        state.connected(Disposables.empty)
        let action3 = state.connect(now: Self.now)
        #expect(action3 == .run(watch: false), "held: connect again without asking")
    }

    @Test func aSharedDatabaseWaitsOutTheGraceThenRunsAndWatches() {
        var state = Self.state(shared: true)
        let after = Self.now + SourceSupervisor.claimGrace
        let action1 = state.connect(now: Self.now, claimGranted: true)
        #expect(action1 == .waitUntil(after))
        let action2 = state.connect(now: after)
        #expect(action2 == .run(watch: true))
        state.connected(Disposables.empty)
        let action3 = state.connect(now: after)
        #expect(action3 == .run(watch: false), "already connected: already watched")
    }

    @Test func aRefusedClaimSchedulesOneRetryAtATime() {
        var state = Self.state(shared: true)
        let action1 = state.connect(now: Self.now, claimGranted: false)
        #expect(action1 == .retryLater)
        #expect(state.claim == .retryScheduled)
        let action2 = state.connect(now: Self.now, claimGranted: false)
        #expect(action2 == .nothing, "a retry is already scheduled")
        state.claimRetryDue()
        let action3 = state.connect(now: Self.now)
        #expect(action3 == .askForClaim)
    }

    @Test func theProcessStatusFollowsItsRuns() {
        var state = Self.state()
        state.processStarted(pid: 42)
        #expect(state.status == .running(pid: 42) && state.starts == 1)
        state.processStopped(pid: 7)
        #expect(state.status == .running(pid: 42), "another run's stop changes nothing")
        state.restarting(after: "exit status 2; stderr:\nboom")
        #expect(state.status == .restarting(attempt: 1))
        #expect(state.lastFailure == "exit status 2; stderr:\nboom")
        state.processStarted(pid: 43)
        state.processStopped(pid: 43)
        #expect(state.status == .stopped && state.starts == 2)
    }

    @Test func retiringStopsTheRunAndEverythingAfter() {
        var state = Self.state()
        _ = state.connect(now: Self.now, claimGranted: true)
        let run = SerialDisposable()
        state.connected(run)
        state.processStarted(pid: 42)
        let retired = state.retire()
        #expect(retired as? SerialDisposable === run)
        #expect(state.status == .stopped)
        let action1 = state.connect(now: Self.now)
        #expect(action1 == .nothing)
        #expect(state.leasable == nil)
        let action2 = state.hold(now: Self.now)
        #expect(action2 == .nothing)
        let given1 = state.giveUpClaim()
        #expect(given1, "the claim is given up after")
        let given2 = state.giveUpClaim()
        #expect(!given2, "once")
    }

    @Test func anEndedRunIsResetToRunAgain() {
        var state = Self.state()
        let run = SerialDisposable()
        state.connected(run)
        state.ended(.failed(message: "exit 1"))
        let action = state.connect(now: Self.now)
        #expect(action == .nothing)
        #expect(state.leasable == nil)
        let ended = state.reset()
        #expect(ended as? SerialDisposable === run)
        #expect(state.status == .notConnected)
        let again = state.reset()
        #expect(again == nil, "a stream that has not ended has nothing to reset")
    }

    @Test func theLastLeaseGivesTheClaimUp() {
        var state = Self.state()
        #expect(state.leasable != nil)
        let (first, second) = (SerialDisposable(), SerialDisposable())
        state.leased(first)
        state.leased(second)
        let action1 = state.hold(now: Self.now)
        #expect(action1 == .askForClaim)
        let action2 = state.hold(now: Self.now, claimGranted: true)
        #expect(action2 == .run(watch: false))
        let last1 = state.released(first)
        #expect(!last1)
        let last2 = state.released(second)
        #expect(last2, "the last subscriber here left: release the claim")
        #expect(state.claim == .notHeld)
    }

    @Test func aRefusedLeaseRetriesOnItsOwn() {
        var state = Self.state(shared: true)
        state.leased(SerialDisposable())
        let action1 = state.hold(now: Self.now, claimGranted: false)
        #expect(action1 == .retryLater)
        let action2 = state.hold(now: Self.now, claimGranted: false)
        #expect(action2 == .retryLater, "each holder waits for the claim")
        #expect(state.claim == .notHeld)
    }

    @Test func watchingRunsWhileTheSourceRunsHereUnderTheClaim() {
        var state = Self.state(shared: true)
        let starts1 = state.startWatching()
        #expect(starts1)
        let starts2 = state.startWatching()
        #expect(!starts2, "one watch at a time")
        let due1 = state.watchDue()
        #expect(!due1, "nothing runs here: the watch stops")
        let starts3 = state.startWatching()
        #expect(starts3, "and may start again")
        _ = state.connect(now: Self.now, claimGranted: true)
        state.connected(Disposables.empty)
        let due2 = state.watchDue()
        #expect(due2)
    }

    @Test func aLostClaimHandsBackWhatRanHere() {
        var state = Self.state(shared: true)
        _ = state.connect(now: Self.now, claimGranted: true)
        let run = SerialDisposable()
        state.connected(run)
        state.processStarted(pid: 42)
        let holder = SerialDisposable()
        state.leased(holder)
        _ = state.startWatching()
        let lost = state.claimLost()
        #expect(lost.connection as? SerialDisposable === run)
        #expect(lost.holders.count == 1 && lost.holders[0] === holder)
        #expect(lost.autoconnected != nil)
        #expect(state.status == .notConnected && state.claim == .notHeld && !state.watching)
        let action = state.connect(now: Self.now)
        #expect(action == .askForClaim, "claimed again like a new one")
    }
}

/// Which commits the source registry takes to its queue: only those that can start,
/// retire or reset a source.
@Suite("SourceRegistry")
struct SourceRegistryTests {
    static func change(source: StreamSource?, deleted: Bool = false) -> CommitBatch.Change {
        let info = StreamInfo(
            name: "s", config: StreamConfig(capacity: nil, source: source), createdAt: Date(timeIntervalSince1970: 0),
            firstSequence: 1, lastSequence: 1, byteCount: 1, terminal: nil, terminalAt: nil)
        return CommitBatch.Change(info: deleted ? nil : info, appended: [])
    }

    @Test func commitsOfStreamsWithoutASourceAreNotHandedOn() {
        let batch = CommitBatch(changes: ["a": Self.change(source: nil), "b": Self.change(source: nil)])
        #expect(!SourceRegistry.concernsSources(batch))
    }

    @Test func aStreamWithASourceOrADeletionIsHandedOn() {
        let source = StreamSource(command: "echo hi", connect: .eager)
        #expect(SourceRegistry.concernsSources(CommitBatch(changes: ["a": Self.change(source: nil), "b": Self.change(source: source)])))
        #expect(SourceRegistry.concernsSources(CommitBatch(changes: ["a": Self.change(source: nil, deleted: true)])))
    }
}
