import Foundation
import ReplayCore
import ReplayModel
import Testing

@testable import ReplayServer

/// A scheduled source's ticks on virtual time: what runs at start, and a chain's life.
@Suite("Scheduled sources' ticks")
struct TickPlanTests {
    static func time(_ text: String) -> Date { Timestamp.parseRFC3339(text)! }
    static func millis(_ text: String) -> Int64 { Timestamp.millis(time(text)) }

    @Test func atStartOneRunMakesUpForEveryMissedTick() throws {
        let every5 = try CronSchedule("*/5 * * * *")
        let created = Self.time("2026-12-01T10:01:00Z")
        // A new source: nothing was missed since its stream was made.
        #expect(
            TickPlan.start(every5, lastTick: nil, created: created, now: Self.time("2026-12-01T10:04:10Z"))
                == TickPlan(catchUp: nil, next: Self.time("2026-12-01T10:05:00Z")))
        // Down from 10:06 to 10:31:20: five ticks missed, one run, claimed by the start's minute.
        #expect(
            TickPlan.start(every5, lastTick: Self.millis("2026-12-01T10:05:00Z"), created: created, now: Self.time("2026-12-01T10:31:20Z"))
                == TickPlan(catchUp: Self.millis("2026-12-01T10:31:00Z"), next: Self.time("2026-12-01T10:35:00Z")))
        // A second start in the same minute finds that run claimed: nothing to make up.
        #expect(
            TickPlan.start(every5, lastTick: Self.millis("2026-12-01T10:31:00Z"), created: created, now: Self.time("2026-12-01T10:31:50Z"))
                == TickPlan(catchUp: nil, next: Self.time("2026-12-01T10:35:00Z")))
        // Never ran, created before a tick that passed while down.
        #expect(
            TickPlan.start(every5, lastTick: nil, created: created, now: Self.time("2026-12-01T10:07:00Z")).catchUp
                == Self.millis("2026-12-01T10:07:00Z"))
    }

    @Test func aChainEndsWhenTheSourceIsActivatedAgainOrRetired() {
        var state = SourceState(shared: false)
        let first = state.startTicking(next: nil)
        let goesOn = state.ticks(first, next: Self.time("2026-12-01T10:05:00Z"))
        #expect(goesOn)
        #expect(state.nextTick == Self.time("2026-12-01T10:05:00Z"))
        let second = state.startTicking(next: nil)
        let oldGoesOn = state.ticks(first, next: nil)
        #expect(!oldGoesOn, "a reset's new chain replaces the old one")
        let newGoesOn = state.ticks(second, next: nil)
        #expect(newGoesOn)
        let starts = state.tickRunStarts(SerialDisposable())
        let duringRun = state.tickRunStarts(SerialDisposable())
        #expect(starts && !duringRun, "a tick during a run is skipped")
        state.tickRunEnded(failure: "exit status 1")
        #expect(state.lastFailure == "exit status 1")
        let next = state.tickRunStarts(SerialDisposable())
        #expect(next, "the next tick runs")
        _ = state.retire()
        let afterRetire = state.ticks(second, next: nil)
        #expect(!afterRetire)
        #expect(state.nextTick == nil)
    }
}
