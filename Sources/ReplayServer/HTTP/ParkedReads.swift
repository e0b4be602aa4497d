import NIOCore
import NIOPosix
import ReplaySync

/// The live reads parked at one HTTP front door (`LiveWait`): each one's deadline, kept in
/// 10 ms slots behind one scheduled task, and all of them, ended at once when the door
/// shuts down.
///
/// Why not a timer of NIO's per wait and a graceful-shutdown handler per wait, as before:
/// an SSE reader parks once per event it is sent, and with 10,000 readers of streams that
/// take an event a second that was 10,000 timers a second scheduled and cancelled in an
/// event loop's heap of scheduled tasks (each an insertion and a removal under the loop's
/// lock, most of the removals on the writer's thread as a commit woke the stream's
/// readers), and as many registrations with the service group's shutdown manager: a
/// fifth of the daemon's samples in `perf record -e cpu-clock -g` during `replay-bench
/// --against replay-http --scenarios sse-readers`, and 37 % of its CPU per delivery. Here parking is a dictionary entry in
/// the slot of its deadline and leaving is its removal, under one lock; the one task
/// scheduled is for the earliest slot, and is moved only when a wait ends sooner than
/// every other. (A hashed timing wheel, as Netty's `HashedWheelTimer`; neither swift-nio
/// nor the other packages this project uses has one.)
///
/// A wait ends at its deadline or up to one slot (10 ms) after it, never before.
final class ParkedReads: Sendable {
    /// The width of a slot, in nanoseconds: how late a deadline may be kept.
    static let slotNanoseconds: UInt64 = 10_000_000

    /// Where a parked wait is, to take it out when it ends otherwise.
    struct Ticket: Sendable {
        fileprivate let slot: UInt64
        fileprivate let race: ObjectIdentifier
    }

    private struct State {
        /// The parked waits by slot (a deadline's nanoseconds over `slotNanoseconds`, rounded up).
        var slots: [UInt64: [ObjectIdentifier: LiveWait.Race]] = [:]
        /// The slots that hold a wait, in order: the first is the next to end.
        var order: [UInt64] = []
        /// The slot the scheduled task is for, and the task.
        var armed: (slot: UInt64, task: Scheduled<Void>)?
        var shutDown = false
    }

    private let state = Locked(State())
    private let loop: any EventLoop

    /// `loop` runs the timer and ends the waits whose time came (a test passes one on virtual time).
    init(loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()) {
        self.loop = loop
    }

    /// Parks `race` until `timeout` from now, when it is finished as `.timedOut`. `nil`: the
    /// door is shutting down, and nothing was parked.
    func park(_ race: LiveWait.Race, timeout: Duration) -> Ticket? {
        let deadline = loop.now + TimeAmount(timeout)
        let slot = deadline.uptimeNanoseconds / Self.slotNanoseconds + 1
        let id = ObjectIdentifier(race)
        return state.withLock { state -> Ticket? in
            guard !state.shutDown else { return nil }
            if state.slots[slot] == nil {
                state.order.insert(slot, at: state.order.insertionIndex(of: slot))
            }
            state.slots[slot, default: [:]][id] = race
            if state.armed.map({ slot < $0.slot }) ?? true { arm(slot, &state) }
            return Ticket(slot: slot, race: id)
        }
    }

    /// Takes a wait out that ended otherwise (a commit, the connection's close, cancellation).
    /// The task scheduled stays: when it runs and finds its slot empty it moves on.
    func leave(_ ticket: Ticket) {
        state.withLock { state in
            guard state.slots[ticket.slot]?.removeValue(forKey: ticket.race) != nil, state.slots[ticket.slot]?.isEmpty == true else { return }
            state.slots[ticket.slot] = nil
            let index = state.order.insertionIndex(of: ticket.slot)
            if index < state.order.count, state.order[index] == ticket.slot { state.order.remove(at: index) }
        }
    }

    /// The door shuts down: every parked wait ends as `.shuttingDown` now, and every later
    /// one at once.
    func shutDown() {
        let parked = state.withLock { state -> [LiveWait.Race] in
            state.armed?.task.cancel()
            defer { state = State(shutDown: true) }
            return state.slots.values.flatMap(\.values)
        }
        for race in parked { race.finish(.shuttingDown) }
    }

    /// How many waits are parked (for tests).
    var count: Int { state.withLock { $0.slots.values.reduce(0) { $0 + $1.count } } }

    private func arm(_ slot: UInt64, _ state: inout State) {
        state.armed?.task.cancel()
        let task = loop.scheduleTask(deadline: .uptimeNanoseconds(slot * Self.slotNanoseconds)) { [self] in ring(slot) }
        state.armed = (slot, task)
    }

    /// The scheduled task: ends the waits of every slot whose time came, then is scheduled
    /// for the next slot that holds a wait.
    private func ring(_ slot: UInt64) {
        let now = loop.now.uptimeNanoseconds / Self.slotNanoseconds
        let due = state.withLock { state -> [LiveWait.Race] in
            guard state.armed?.slot == slot else { return [] }  // moved earlier meanwhile
            state.armed = nil
            let ended = state.order.prefix { $0 <= now }.count
            var due: [LiveWait.Race] = []
            for slot in state.order[..<ended] {
                if let races = state.slots.removeValue(forKey: slot) { due.append(contentsOf: races.values) }
            }
            state.order.removeFirst(ended)
            if let next = state.order.first { arm(next, &state) }
            return due
        }
        for race in due { race.finish(.timedOut) }
    }
}

extension Array where Element == UInt64 {
    /// Where `value` is or would go in this ascending array (binary search).
    fileprivate func insertionIndex(of value: UInt64) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if self[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
