import DequeModule
import NIOCore
import ReplaySync

/// The parked SSE readers due a step (`ParkedEventStream`), stepped in turns by one task
/// in the cooperative pool while any are due, and by none while none are.
///
/// Why a queue with one task, not a step on the connection's event loop as each reader
/// wakes: a commit wakes every reader of its stream at once, and an event loop runs every
/// task it is given before it reads its sockets again. Stepped on their loops, 1,000
/// readers of one stream at 1,000 events/s each wrote every commit alone, and the
/// publishers' POSTs on the same loops waited behind them: 36 µs of CPU a delivery, and
/// 146,000 deliveries/s of the 1,000,000 asked (`replay-bench --scenarios sse-readers`).
/// In a queue served apart from the loops, a reader that waits its turn finds every event
/// committed meanwhile and writes them in one chunk: the writes per event fall as the
/// readers grow, and the loops keep reading their sockets. That is how readers served in
/// tasks of their own behaved, without a task for each.
final class ReaderTurns: Sendable {
    /// How many readers a turn steps before the task lets the pool run other work.
    static let perTurn = 64

    private struct Due {
        var readers = Deque<ParkedEventStream>()
        /// A task is stepping the readers: it takes those added meanwhile too.
        var stepping = false
    }

    private let due = Locked(Due())

    /// `reader` is due a step (from any thread): at the back of the line.
    func add(_ reader: ParkedEventStream) {
        let start = due.withLock { due in
            due.readers.append(reader)
            defer { due.stepping = true }
            return !due.stepping
        }
        if start { Task { await self.step() } }
    }

    /// Steps the due readers in turns until none is left.
    private func step() async {
        while let turn = next() {
            for reader in turn { reader.step() }
            await Task.yield()
        }
    }

    /// The next turn's readers, or `nil` (and no task stepping) when none is due.
    private func next() -> [ParkedEventStream]? {
        due.withLock { due in
            guard !due.readers.isEmpty else {
                due.stepping = false
                return nil
            }
            let count = min(Self.perTurn, due.readers.count)
            defer { due.readers.removeFirst(count) }
            return Array(due.readers.prefix(count))
        }
    }
}
