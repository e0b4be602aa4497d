import Hummingbird
import NIOCore
import ReplayCore

/// What an SSE response reads: the next chunk of its text, and what follows it. The
/// Durable Streams reads' framing is one (`DurableStreamsFeed`), the page's tail another
/// (`TailFeed`); the loop around them, its waits and its ends, is `SSEReader`'s alone.
protocol SSEFeed: Sendable {
    /// The hub and position a quiet reader waits on.
    var watched: (hub: StreamHub, after: UInt64) { get }
    /// The next chunk's text and what follows it; `nil` when the stream is gone. Kept out
    /// of line (`@inline(never)`): its locals must not join the reader loop's frame, which
    /// a parked reader keeps, nor add a frame between the two.
    mutating func next() async -> (ByteBuffer, SSENext)?
}

/// What follows a chunk written.
enum SSENext {
    case read
    case wait(Duration)
    case end
}

/// One SSE response's loop: a chunk read, its text written, then a wait while the stream
/// is quiet. A chunk is written, and the next is read only once the write is done, so a
/// reader that stalls holds its position and nothing else. The response ends when the
/// feed ends, the daemon shuts down, or the connection closes: noticed at once, through
/// the connection's close future (`WaitInterrupt`), not at the next write.
///
/// A class, and its loop never inlined, so that the loop's async frame holds a reference
/// and what crosses its waits, and the reader's state sits on the heap at its own size; what
/// the loop does between waits is plain functions the compiler is told not to inline. A
/// reader's connection task keeps, for as long as the reader is connected, the slabs of
/// the deepest call it has made, so each frame on this path counts once per reader (the
/// loop's was 1,424 bytes as a closure with the framing inline).
final class SSEReader<Feed: SSEFeed> {
    private var feed: Feed
    private let parked: ParkedReads
    private let interrupt = WaitInterrupt()
    /// Held while the reader reads (and released by `deinit` if its body never ran): a lazy
    /// derivation or source connects, a refcount one runs while the reader stays.
    private let lease: any Disposable

    private init(feed: Feed, parked: ParkedReads, closed: EventLoopFuture<Void>, lease: any Disposable) {
        let interrupt = self.interrupt
        closed.whenComplete { _ in interrupt.fire() }
        self.feed = feed
        self.parked = parked
        self.lease = lease
    }

    deinit { lease.dispose() }

    /// The body of an SSE response that reads `feed`. The reader is made here rather than
    /// in the body, so that the body's closure holds a reference rather than a copy of
    /// what the reader holds.
    static func body(_ feed: Feed, parked: ParkedReads, closed: EventLoopFuture<Void>, lease: any Disposable) -> ResponseBody {
        // Unchecked: the reader is this response's alone, and its body runs once, in the
        // connection's task.
        nonisolated(unsafe) let reader = SSEReader(feed: feed, parked: parked, closed: closed, lease: lease)
        return ResponseBody { writer in try await reader.run(writing: &writer) }
    }

    @inline(never)
    func run(writing writer: inout any ResponseBodyWriter) async throws {
        Self.count(+1)
        defer {
            Self.count(-1)
            lease.dispose()
        }
        reading: while !Task.isCancelled {
            guard let (buffer, next) = await feed.next() else { break }
            try await writer.write(buffer)
            switch next {
            case .read: continue
            case .end: break reading
            case .wait(let wait):
                let outcome = await LiveWait.wait(on: feed.watched, timeout: wait, parked: parked, interrupt: interrupt)
                if outcome == .shuttingDown || outcome == .connectionClosed { break reading }
            }
        }
        try await writer.finish(nil)
    }

    /// The readers connected (`replay_http_sse_readers`).
    @inline(never)
    private static func count(_ change: Int) {
        if change > 0 { DaemonMetrics.sseReaders.increment() } else { DaemonMetrics.sseReaders.decrement() }
    }
}
