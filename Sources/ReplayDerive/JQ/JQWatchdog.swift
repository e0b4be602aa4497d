import CJQ
import CJQMeter
import Foundation

/// Cuts off a jq program that passes its budget for one input, in time or in memory, so
/// that a derivation or a reader whose program loops (`def f: f; f`, `last(range(1e18))`)
/// or grows without bound (`"x" | until(false; . + .)`) costs one runtime error, not a
/// thread held forever or a process that jq aborts when `malloc` fails.
///
/// jq 1.6 has no interrupt hook, but its interpreter checks one flag before every
/// instruction (`jq->halted`, read at the top of `jq_next`'s loop in `execute.c`), and
/// `jq_halt` sets it. A halted program returns at its next instruction; its `JQProgram`
/// throws a runtime error and stays usable (`jq_start` clears the flag). The flag is a
/// plain `int` written by whoever halts and read by the interpreter: an aligned store it
/// sees at its next instruction on every architecture Swift runs on, the one
/// cross-thread access jq makes without a lock.
///
/// - Memory is counted exactly, on the program's own thread: jq's calls to `malloc` and
///   `free` go through `CJQMeter`'s wrappers, which charge them to the run under way on
///   that thread and halt it at the allocation that passes its limit. Other threads'
///   allocations never count, and no watcher has to be scheduled in time.
/// - Time is what this type watches: one thread looks at every running program each tick
///   and halts one past its limit, counted as the CPU time of its thread, so that a busy
///   machine does not fail a program that was only waiting. `begin` and `end` take the
///   program's own lock (its `Slot`'s), which the watcher holds while it looks at that
///   program and halts it, so a halt never lands between two runs; the meter lets only
///   the first of the two limits halt a run. A lock per program, not one for all: `begin`
///   and `end` run for every event, and programs on two threads (a derivation's runner
///   and its helper) taking one lock four times per event spent a tenth of their time
///   waking each other in the kernel.
///
/// `@unchecked Sendable` with locks rather than a `Mutex`: what they guard holds the
/// runs' meters, raw pointers shared with C, and handing them over under the lock is the
/// point. The condition guards the set of slots and is the watcher's sleep, so that a
/// program adopted while the watcher decides to sleep always wakes it.
final class JQWatchdog: @unchecked Sendable {
    static let shared = JQWatchdog()

    /// Why a run was halted.
    enum Breach: Sendable, Equatable {
        case time(Duration)
        case memory(Int)
    }

    fileprivate struct Run {
        let meter: UnsafeMutablePointer<replay_jq_meter>
        /// The thread running it: its CPU time is what the time limit counts, so that a
        /// program descheduled on a busy machine is not charged for the wait.
        let thread: pthread_t
        let started: ContinuousClock.Instant
        let timeLimit: Duration
        /// The thread's CPU time when the watchdog first saw the run still going, and the
        /// time it is charged for up to then (at most a tick).
        var sighted: (cpu: Duration, charged: Duration)?
    }

    /// One program's place in the watch: its run under way, if any, under its own lock.
    final class Slot: @unchecked Sendable {
        fileprivate let lock = NSLock()
        fileprivate var run: Run?
    }

    private struct Watched {
        /// Programs alive, by their slots: the thread sleeps while there are none.
        var slots: [ObjectIdentifier: Slot] = [:]
    }

    /// Whether jq's allocations are metered (`replay_jq_meter_install`): where they are
    /// not, a program with a memory limit is refused rather than run unbounded.
    static let metersMemory = replay_jq_meter_install()

    /// How often running programs are looked at: a loop is cut off at most a tick late.
    static let tick: Duration = .milliseconds(5)
    private let condition = NSCondition()
    private var watched = Watched()

    /// Made at the first program's adoption (`shared` is lazy), with its thread.
    private init() {
        let thread = Thread { [self] in watch() }
        thread.name = "replay.jq-watchdog"
        thread.start()
    }

    /// A program exists: the watchdog runs while any does. Its runs are watched in the
    /// slot returned.
    func adopt() -> Slot {
        let slot = Slot()
        withLock { $0.slots[ObjectIdentifier(slot)] = slot }
        condition.signal()
        return slot
    }

    func release(_ slot: Slot) {
        withLock { _ = $0.slots.removeValue(forKey: ObjectIdentifier(slot)) }
    }

    /// Starts `state` on `input` (`jq_start`) on this thread, metered by `meter`, and
    /// watches it until `end`.
    func begin(
        _ slot: Slot, state: OpaquePointer, meter: UnsafeMutablePointer<replay_jq_meter>, input: jv, budget: JQProgram.Budget
    ) {
        slot.lock.lock()
        defer { slot.lock.unlock() }
        jq_start(state, input, 0)
        replay_jq_meter_begin(meter, UnsafeMutableRawPointer(state), Int64(clamping: budget.memoryLimit))
        slot.run = Run(meter: meter, thread: pthread_self(), started: .now, timeLimit: budget.timeLimit)
    }

    /// The run is over; what halted it, if anything did.
    func end(_ slot: Slot, budget: JQProgram.Budget) -> Breach? {
        slot.lock.lock()
        defer { slot.lock.unlock() }
        guard let run = slot.run else { return nil }
        slot.run = nil
        switch Int(replay_jq_meter_end(run.meter)) {
        case REPLAY_JQ_PAST_TIME: return .time(budget.timeLimit)
        case REPLAY_JQ_PAST_MEMORY: return .memory(budget.memoryLimit)
        default: return nil
        }
    }

    private func withLock<T>(_ body: (inout Watched) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&watched)
    }

    private func watch() {
        condition.lock()
        while true {
            while watched.slots.isEmpty { condition.wait() }
            _ = condition.wait(until: Date(timeIntervalSinceNow: Self.tick / .seconds(1)))
            inspect(&watched)
        }
    }

    /// Halts every run past its time limit (under the condition's lock, each slot under
    /// its own).
    private func inspect(_ watched: inout Watched) {
        let now = ContinuousClock.now
        for slot in watched.slots.values {
            slot.lock.lock()
            defer { slot.lock.unlock() }
            guard var run = slot.run else { continue }
            let elapsed = now - run.started
            guard elapsed >= Self.tick else { continue }
            // The thread is inside its run (`end` waits for this slot's lock), so its
            // clock is valid.
            let cpu = Self.cpuTime(of: run.thread)
            guard let sighted = run.sighted else {
                run.sighted = (cpu, min(elapsed, Self.tick))
                slot.run = run
                continue
            }
            if sighted.charged + (cpu - sighted.cpu) > run.timeLimit {
                _ = replay_jq_meter_halt(run.meter, Int32(REPLAY_JQ_PAST_TIME))
            }
        }
    }

    private static func cpuTime(of thread: pthread_t) -> Duration {
        var clock = clockid_t()
        var time = timespec()
        guard pthread_getcpuclockid(thread, &clock) == 0, clock_gettime(clock, &time) == 0 else { return .zero }
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
}
