import NIOCore
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
/// Its chunks are written below NIO's HTTP encoder, which its connection no longer has
/// (`FirstRequestGate` takes the connection's HTTP handlers away before it starts): each
/// is one buffer, framed as an HTTP/1.1 chunk (`HTTPChunk`).
///
/// The response ends when the feed ends (the stream closed, gone, `--sse-duration`), the
/// daemon shuts down, or the connection closes; the connection then closes, as its head
/// said (`Connection: close`).
///
/// Unchecked: its feed is read and moved by one step at a time (a step starts from the
/// previous one's write completion or from its wait's end, never while one runs), and
/// `life` is the only state two threads touch, under its lock.
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
    /// Whether it started (its connection writes its chunks as they are) and ended.
    private let life = Locked((started: false, ended: false))

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
        DaemonMetrics.sseReaders.increment()
        DaemonMetrics.sseReadersParked.increment()
    }

    /// The response's head is written, and its connection writes buffers as they are:
    /// reads from the start.
    func start() {
        let ended = life.withLock { life in
            life.started = true
            return life.ended
        }
        if !ended { next() }
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

    /// Called by `ReaderTurns`, on the connection's event loop, with the chunks its turn's
    /// readers framed so far.
    func step(sharing frames: inout SharedFrames) {
        switch feed.nextFromMemory(sharing: &frames) {
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
        channel.writeAndFlush(buffer).whenComplete { result in
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
    /// (Ended before it started, its connection may still have its HTTP handlers, which a
    /// buffer must not pass: it only closes.)
    private func end() {
        let (first, started) = life.withLock { life in
            defer { life.ended = true }
            return (!life.ended, life.started)
        }
        guard first else { return }
        DaemonMetrics.sseReaders.decrement()
        DaemonMetrics.sseReadersParked.decrement()
        lease.dispose()
        answered?()
        let channel = self.channel
        guard started else { return channel.close(promise: nil) }
        channel.writeAndFlush(HTTPChunk.last).whenComplete { _ in channel.close(promise: nil) }
    }
}
