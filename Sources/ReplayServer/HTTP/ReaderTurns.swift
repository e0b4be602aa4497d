import DequeModule
import NIOCore
import ReplaySync

/// The parked SSE readers of one event loop that are due a step (`ParkedEventStream`),
/// stepped on that loop in turns of at most `perTurn`, with the loop's I/O between turns.
///
/// Why turns: a commit wakes every reader of its stream at once, and an event loop runs
/// every task it is given, and every task those add, before it reads its sockets again.
/// Stepped as each woke, 1,000 readers of one stream at 1,000 events/s each wrote every
/// commit alone and the publishers' POSTs on the same loops waited behind them: 36 µs of
/// CPU a delivery, 146,000 deliveries/s of the 1,000,000 asked (`replay-bench --scenarios
/// sse-readers`). In turns, the POSTs are read between them, and a reader that waited its
/// turn writes every event committed meanwhile in one chunk.
///
/// A turn's readers share what they frame (`SharedFrames`): the readers of one stream that
/// a commit woke write one text, framed once a loop.
///
/// Why on the connection's own loop, not one task in the cooperative pool stepping all the
/// door's readers: there, a burst of wakes (the keep-alives of readers that connected
/// together) was stepped on one thread, and each reader's write and park crossed back to
/// its loop; 10,000 readers of 100 streams saw a p99 of 230-450 ms from publish to
/// delivery, against 43-45 ms here. (As Netty bounds what one read of a channel takes, so
/// that no channel keeps its loop.)
final class ReaderTurns: Sendable {
    /// How many readers a turn steps before the loop reads its sockets again.
    static let perTurn = 64
    /// The pause between turns: long enough that the loop's tick ends and it reads its
    /// sockets (a task due now would run in the same tick).
    static let pause = TimeAmount.microseconds(50)

    private struct Due {
        var readers = Deque<ParkedEventStream>()
        /// A turn is scheduled: it takes those added meanwhile too.
        var scheduled = false
        /// What the turns so far framed, kept while readers are due.
        var frames = SharedFrames()
    }

    private let loop: any EventLoop
    private let due = Locked(Due())

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// `reader` is due a step (from any thread): at the back of the line.
    func add(_ reader: ParkedEventStream) {
        let start = due.withLock { due in
            due.readers.append(reader)
            defer { due.scheduled = true }
            return !due.scheduled
        }
        if start { loop.execute { self.turn() } }
    }

    private func turn() {
        var (taken, frames) = due.withLock { due -> ([ParkedEventStream], SharedFrames) in
            let count = min(Self.perTurn, due.readers.count)
            defer {
                due.readers.removeFirst(count)
                due.frames = SharedFrames()
            }
            return (Array(due.readers.prefix(count)), due.frames)
        }
        for reader in taken { reader.step(sharing: &frames) }
        let more = due.withLock { due in
            if due.readers.isEmpty {
                due.scheduled = false
            } else {
                due.frames = frames
            }
            return due.scheduled
        }
        if more { loop.scheduleTask(in: Self.pause) { self.turn() } }
    }
}
