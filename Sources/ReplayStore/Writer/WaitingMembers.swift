import Foundation
import ReplayModel
import ReplaySync

/// Members of consumer groups waiting for work, kept by the writer between batches.
///
/// A member asks for work with a ticket (`GroupRequest.handOut(wait:)`). When the hand-out
/// would give nothing, the request waits here instead of being answered, and the writer
/// serves it at the end of the first batch that could give it something
/// (`WriterRules.serveWaiting`): one that touches its stream (new events; an ACK, a NACK
/// or a leave that frees room or events; retention; a deletion), or one that runs when a
/// pending event's time runs out (the timer here). The events are then handed out in the
/// commit that stored or freed them. Before, a member learned of a commit from its hub and
/// asked again: a second commit, and a trip through its task, for every event of a work
/// queue (see docs/PERFORMANCE.md, "Work queues").
///
/// Changed on the writer's thread only: a batch's decisions are applied once its
/// transaction committed (`settle`), so a failed one leaves every waiter waiting.
final class WaitingMembers: Sendable {
    struct Waiter: Sendable {
        /// What the member asked for, fixed while it waits, behind one reference: the
        /// writer copies each waiter several times a batch (trying it, keeping it, settling
        /// it), and as nine fields each copy retained and released every one of them.
        final class Ask: Sendable {
            let ticket: WaitTicket
            let stream: String
            let group: String
            let member: String
            let limit: Int
            let deadLetter: String?
            let deadLetterConfig: StreamConfig
            let reader: HandoutReader?
            let done: GroupRequest.Completion<GroupHandout>

            init(
                ticket: WaitTicket, stream: String, group: String, member: String, limit: Int, deadLetter: String?,
                deadLetterConfig: StreamConfig, reader: HandoutReader?, done: @escaping GroupRequest.Completion<GroupHandout>
            ) {
                self.ticket = ticket
                self.stream = stream
                self.group = group
                self.member = member
                self.limit = limit
                self.deadLetter = deadLetter
                self.deadLetterConfig = deadLetterConfig
                self.reader = reader
                self.done = done
            }
        }

        let ask: Ask
        /// When its group changes by itself next (`ConsumerGroup.nextDue`), as of the last
        /// time it was tried: the batch after that serves it again.
        var due: Int64?

        init(_ ask: Ask) {
            self.ask = ask
        }
    }

    private struct State {
        var byStream: [String: [WaitTicket: Waiter]] = [:]
        var streamOf: [WaitTicket: String] = [:]
        /// The wake-up armed for the earliest `due` (ms), and its task.
        var alarm: (id: UInt64, at: Int64, task: Task<Void, Never>)?
        var alarmCount: UInt64 = 0
        var writer: WriteQueue?
        /// Tickets whose member stopped waiting before its hand-out reached the writer.
        var cancelled: Set<WaitTicket> = []
    }

    private let state = Locked(State())
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date) {
        self.now = now
    }

    /// The writer that serves the waiters whose time came (`WriteRequest.serveDueWaiters`).
    func start(writer: WriteQueue) {
        state.withLock { $0.writer = writer }
    }

    var isEmpty: Bool { state.withLock { $0.streamOf.isEmpty } }

    /// The waiters of `stream`.
    func waiters(of stream: String) -> [Waiter] {
        state.withLock { state in state.byStream[stream].map { Array($0.values) } ?? [] }
    }

    func waiter(_ ticket: WaitTicket) -> Waiter? {
        state.withLock { state in state.streamOf[ticket].flatMap { state.byStream[$0]?[ticket] } }
    }

    /// A member stopped waiting before its hand-out reached the writer (its task was
    /// cancelled as it asked): the hand-out, which follows in the queue, answers nothing.
    func noteCancelled(_ ticket: WaitTicket) {
        state.withLock { _ = $0.cancelled.insert(ticket) }
    }

    func takeCancelled(_ ticket: WaitTicket) -> Bool {
        state.withLock { state in state.cancelled.isEmpty ? false : state.cancelled.remove(ticket) != nil }
    }

    /// The streams with a waiter whose time has come at `millis`.
    func streams(dueBy millis: Int64) -> [String] {
        state.withLock { state in
            state.byStream.compactMap { stream, waiters in waiters.values.contains { ($0.due ?? .max) <= millis } ? stream : nil }
        }
    }

    /// The dead-letter streams the waiters of `streams` may append to (a shared database
    /// locks them with the batch's others).
    func deadLetters(of streams: Set<String>) -> Set<String> {
        state.withLock { state in
            Set(streams.flatMap { state.byStream[$0]?.values.compactMap(\.ask.deadLetter) ?? [] })
        }
    }

    /// A committed batch's decisions: the waiters it answered leave, the ones it left
    /// waiting stay (or join) with their new `due`. Then the alarm is armed for the
    /// earliest `due`.
    func settle(answered: Set<WaitTicket>, waiting: [Waiter]) {
        let (now, lock) = (now, state)
        lock.withLock { state in
            for ticket in answered { remove(ticket, &state) }
            for waiter in waiting {
                state.byStream[waiter.ask.stream, default: [:]][waiter.ask.ticket] = waiter
                state.streamOf[waiter.ask.ticket] = waiter.ask.stream
            }
            guard let earliest = state.byStream.values.lazy.flatMap(\.values).compactMap(\.due).min() else { return }
            // An alarm armed for later is moved earlier; one armed earlier than needed fires,
            // finds nothing due, and the batch it runs arms the next.
            if let alarm = state.alarm, alarm.at <= earliest { return }
            state.alarm?.task.cancel()
            state.alarmCount &+= 1
            let id = state.alarmCount
            let delay = Duration.milliseconds(max(0, earliest - Timestamp.millis(now())) + 1)
            let task = Task.detached {
                guard (try? await Task.sleep(for: delay)) != nil else { return }
                let writer = lock.withLock { state -> WriteQueue? in
                    guard state.alarm?.id == id else { return nil }
                    state.alarm = nil
                    return state.writer
                }
                writer?.submit(.serveDueWaiters)
            }
            state.alarm = (id, earliest, task)
        }
    }

    /// Takes the waiter out and answers it with `error` at once: the batch that was to
    /// end its wait failed (the member is gone, so nothing is handed to it).
    func fail(_ ticket: WaitTicket, _ error: StoreError) {
        let waiter = state.withLock { state -> Waiter? in
            guard let stream = state.streamOf[ticket] else {
                state.cancelled.insert(ticket)
                return nil
            }
            let waiter = state.byStream[stream]?[ticket]
            remove(ticket, &state)
            return waiter
        }
        waiter?.ask.done(.failure(error))
    }

    /// The store closes: every waiter is answered with `.closed`.
    func close() {
        let waiters = state.withLock { state -> [Waiter] in
            let all = state.byStream.values.flatMap(\.values)
            state.alarm?.task.cancel()
            state = State()
            return all
        }
        for waiter in waiters { waiter.ask.done(.failure(.closed)) }
    }

    private func remove(_ ticket: WaitTicket, _ state: inout State) {
        guard let stream = state.streamOf.removeValue(forKey: ticket) else { return }
        state.byStream[stream]?[ticket] = nil
        if state.byStream[stream]?.isEmpty == true { state.byStream[stream] = nil }
    }
}
