import HTTPTypes
import NIOCore
import NIOHTTPTypes
import ReplayCore
import ReplaySync

/// An SSE response with no task of its own: while its stream is quiet it is this object,
/// parked on the stream's hub (`LiveWait.park`), and nothing else. A commit, its
/// keep-alive's deadline, the connection's close or the daemon's shutdown wakes it; in its
/// turn on its connection's event loop (`ReaderTurns`) it takes the next chunk from the hub's memory, as a live reader's
/// chunk almost always is (else a short task reads it from the store on the read pool), and
/// writes it, and the write's completion parks it again. So a chunk is written
/// before the next is read, as `SSEReader` does, and a reader that stalls holds its
/// position and nothing else.
///
/// Why: a reader served in its connection's task keeps that task for as long as it reads,
/// and with it hummingbird's async channel and the slabs of the deepest call the task made:
/// about 23 KB a reader, where NIO's channel alone holds under 5 KB
/// (`tools/connection_memory.py`). `FirstRequestGate` hands a connection whose first
/// request is an SSE read here before hummingbird has it.
///
/// The response ends when the feed ends (the stream closed, gone, `--sse-duration`), the
/// daemon shuts down, or the connection closes; the connection then closes, as its head
/// said (`Connection: close`).
///
/// Unchecked: its feed is read and moved by one step at a time (a step starts from the
/// previous one's write completion or from its wait's end, never while one runs), and
/// `ended` is the only state two threads touch, under its lock.
final class ParkedEventStream: @unchecked Sendable {
    private var feed: DurableStreamsFeed
    private let channel: any NIOCore.Channel
    private let parked: ParkedReads
    /// Where its steps wait their turn.
    private let turns: ReaderTurns
    private let interrupt = WaitInterrupt()
    /// Held while the reader reads: a lazy derivation or source connects, a refcount one
    /// runs while the reader stays.
    private let lease: any Disposable
    /// Counts and times the request once the response ends (`RequestMetrics`).
    private let answered: (@Sendable () -> Void)?
    private let ended = Locked(false)

    init(
        feed: DurableStreamsFeed, channel: any NIOCore.Channel, parked: ParkedReads, turns: ReaderTurns, lease: any Disposable,
        answered: (@Sendable () -> Void)?
    ) {
        self.feed = feed
        self.channel = channel
        self.parked = parked
        self.turns = turns
        self.lease = lease
        self.answered = answered
    }

    /// The response's head is written: reads from the start.
    func start() {
        DaemonMetrics.sseReaders.increment()
        DaemonMetrics.sseReadersParked.increment()
        next()
    }

    /// The connection closed: a parked wait ends now, a running step at its write.
    func connectionClosed() {
        interrupt.fire()
        end()
    }

    /// One step, in its turn on the connection's event loop (`ReaderTurns`): the next chunk
    /// from the hub's memory, written from there; or, when the store must be read, a short
    /// task that reads it. A step never runs inside the write or the wake that led to it,
    /// so steps never nest.
    private func next() {
        turns.add(self)
    }

    /// Called by `ReaderTurns`, on the connection's event loop.
    func step() {
        switch feed.nextFromMemory() {
        case .framed(let buffer, let following): write(buffer, then: following)
        case .gone: end()
        case .partial(let partial): Task { await self.step(continuing: partial) }
        }
    }

    private func step(continuing partial: HTTPCursor.Partial) async {
        guard let (buffer, following) = await feed.next(continuing: partial) else { return end() }
        write(buffer, then: following)
    }

    private func write(_ buffer: ByteBuffer, then following: SSENext) {
        channel.writeAndFlush(HTTPResponsePart.body(buffer)).whenComplete { result in
            guard case .success = result else { return self.end() }
            self.written(following)
        }
    }

    private func written(_ following: SSENext) {
        switch following {
        case .read: next()
        case .end: end()
        case .wait(let wait):
            LiveWait.park(on: feed.watched, timeout: wait, parked: parked, interrupt: interrupt) { outcome in
                switch outcome {
                case .committed, .timedOut: self.next()
                case .shuttingDown, .connectionClosed: self.end()
                }
            }
        }
    }

    /// Ends the response once, however it ends: its last chunk, then the connection's close.
    private func end() {
        let first = ended.withLock { ended in
            defer { ended = true }
            return !ended
        }
        guard first else { return }
        DaemonMetrics.sseReaders.decrement()
        DaemonMetrics.sseReadersParked.decrement()
        lease.dispose()
        answered?()
        let channel = self.channel
        channel.writeAndFlush(HTTPResponsePart.end(nil as HTTPFields?)).whenComplete { _ in channel.close(promise: nil) }
    }
}
