import Foundation
import ReplayModel

/// When a scheduled source runs, on passed-in times (tested on virtual time): at start,
/// once for ticks missed while the daemon was down, however many; then at each tick.
///
/// A run is claimed in the database by a tick (ms since 1970, `EventStore.claimSourceTick`):
/// a regular run by its tick's own time, the run that makes up for missed ticks by the
/// start's minute, which is later than every tick it makes up for and earlier than the
/// next. Claims only move forward, so each tick runs once, here or on another daemon.
struct TickPlan: Equatable {
    /// The claim of a run now, for missed ticks; `nil`: none was missed.
    let catchUp: Int64?
    /// The next tick; `nil`: the schedule names no date ahead.
    let next: Date?

    /// At start: `lastTick` is the last tick claimed (ms), `nil` for a source that never
    /// ran, whose missed ticks count from the stream's creation.
    static func start(_ schedule: CronSchedule, lastTick: Int64?, created: Date, now: Date) -> TickPlan {
        let since = lastTick.map { Timestamp.date(millis: $0) } ?? created
        let minute = Timestamp.millis(now) / 60_000 * 60_000
        let catchUp = schedule.missed(since: since, now: now) && minute > (lastTick ?? .min) ? minute : nil
        return TickPlan(catchUp: catchUp, next: schedule.next(after: now))
    }
}
