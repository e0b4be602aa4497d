import CJQ
import Foundation

/// Cuts off a jq program that passes its budget for one input, in time or in memory, so
/// that a derivation or a reader whose program loops (`def f: f; f`, `last(range(1e18))`)
/// or grows without bound (`"x" | until(false; . + .)`) costs one runtime error, not a
/// thread held forever or a process that jq aborts when `malloc` fails.
///
/// jq 1.6 has no interrupt hook, but its interpreter checks one flag before every
/// instruction (`jq->halted`, read at the top of `jq_next`'s loop in `execute.c`), and
/// `jq_halt` sets it. So one thread watches every program that is running: past its time
/// limit (CPU time of its thread, so that a busy machine does not fail a program that was
/// only waiting), or once the process's heap has grown by more than its memory limit
/// while it ran, the program is halted and returns at its next instruction; its `JQProgram` throws
/// a runtime error and stays usable (`jq_start` clears the flag). The flag is a plain
/// `int` written here and read there: an aligned store the interpreter sees at its next
/// instruction on every architecture Swift runs on, the one cross-thread access jq makes
/// without a lock. Everything else jq owns is touched by its own thread only: `begin`
/// calls `jq_start` under the same lock that `jq_halt` is called under, so a halt never
/// lands between two runs.
///
/// Memory is the process's heap as glibc counts it (`mallinfo2`), sampled only for a
/// program that has run past one tick: jq allocates with plain `malloc`, with no hook to
/// count one program's bytes. Other threads' allocations in that span count against it,
/// which is why the limit is generous (256 MB by default); a program that grows without
/// bound is stopped within a tick of passing it, or one instruction later (a string that
/// doubles does so in one instruction), when this thread gets a core: on a machine whose
/// cores are all busy it may look a few ticks late.
///
/// `@unchecked Sendable` with an `NSCondition` rather than a `Mutex`: what it guards holds
/// jq's interpreter pointers, which are not `Sendable`, and handing them over under the
/// lock is the point. The one condition is both the table's lock and the watcher's sleep,
/// so that a program adopted while the watcher decides to sleep always wakes it.
final class JQWatchdog: @unchecked Sendable {
    static let shared = JQWatchdog()

    /// Why a run was halted.
    enum Breach: Sendable, Equatable {
        case time(Duration)
        case memory(Int)
    }

    private struct Run {
        let state: OpaquePointer
        /// The thread running it: its CPU time is what the time limit counts, so that a
        /// program descheduled on a busy machine is not charged for the wait.
        let thread: pthread_t
        let started: ContinuousClock.Instant
        let timeLimit: Duration
        let memoryLimit: Int
        /// Where it stood when the watchdog first saw it still running: the thread's CPU
        /// time, and the time it is charged for up to then (at most a tick).
        var sighted: (cpu: Duration, charged: Duration)?
        /// The heap at that moment.
        var heapBaseline = 0
        var breach: Breach?
    }

    private struct Watched {
        var runs: [ObjectIdentifier: Run] = [:]
        /// Programs alive: the thread sleeps while there are none.
        var programs = 0
    }

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

    /// A program exists: the watchdog runs while any does.
    func adopt() {
        withLock { $0.programs += 1 }
        condition.signal()
    }

    func release() {
        withLock { $0.programs -= 1 }
    }

    /// Starts `state` on `input` (`jq_start`) and watches it until `end`.
    func begin(_ key: ObjectIdentifier, state: OpaquePointer, input: jv, budget: JQProgram.Budget) {
        withLock { watched in
            jq_start(state, input, 0)
            watched.runs[key] = Run(
                state: state, thread: pthread_self(), started: .now, timeLimit: budget.timeLimit, memoryLimit: budget.memoryLimit)
        }
    }

    /// The run is over; what halted it, if anything did.
    func end(_ key: ObjectIdentifier) -> Breach? {
        withLock { $0.runs.removeValue(forKey: key)?.breach }
    }

    private func withLock<T>(_ body: (inout Watched) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&watched)
    }

    private func watch() {
        condition.lock()
        while true {
            while watched.programs == 0 { condition.wait() }
            _ = condition.wait(until: Date(timeIntervalSinceNow: Self.tick / .seconds(1)))
            inspect(&watched)
        }
    }

    /// Halts every run past its limits (under the lock).
    private func inspect(_ watched: inout Watched) {
        guard !watched.runs.isEmpty else { return }
        let now = ContinuousClock.now
        var heap: Int?
        for (key, var run) in watched.runs where run.breach == nil {
            let elapsed = now - run.started
            guard elapsed >= Self.tick else { continue }
            let current = heap ?? Self.heapBytes()
            heap = current
            // The thread is inside its run (`end` waits for this lock), so its clock
            // is valid.
            let cpu = Self.cpuTime(of: run.thread)
            guard let sighted = run.sighted else {
                run.sighted = (cpu, min(elapsed, Self.tick))
                run.heapBaseline = current
                watched.runs[key] = run
                continue
            }
            if sighted.charged + (cpu - sighted.cpu) > run.timeLimit {
                run.breach = .time(run.timeLimit)
            } else if current - run.heapBaseline > run.memoryLimit {
                run.breach = .memory(run.memoryLimit)
            }
            if run.breach != nil { jq_halt(run.state, jv_null(), jv_null()) }
            watched.runs[key] = run
        }
    }

    private static func cpuTime(of thread: pthread_t) -> Duration {
        var clock = clockid_t()
        var time = timespec()
        guard pthread_getcpuclockid(thread, &clock) == 0, clock_gettime(clock, &time) == 0 else { return .zero }
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }

    /// Bytes the process has allocated with `malloc` and not freed (`replay_heap_bytes`:
    /// glibc's figures, or a sanitizer's allocator's).
    private static func heapBytes() -> Int {
        Int(replay_heap_bytes())
    }
}
