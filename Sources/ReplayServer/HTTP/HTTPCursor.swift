import NIOCore
import ReplayStore

/// A reader of the HTTP front door: a `LogCursor` over one stream, framed as payloads
/// gathered into one buffer. A catch-up or long-poll response takes one `chunk`; an SSE
/// response takes chunks until the stream ends, each written before the next is read, so a
/// stalled reader costs its position, not a buffer. A store that is away is waited for
/// briefly (`CursorRetry.briefly`), then the read fails with 503.
struct HTTPCursor: Sendable {
    private var cursor: LogCursor<PooledStore, Payloads>
    /// The last event delivered (the offset's sequence number).
    private(set) var position: UInt64
    /// Why the cursor cannot go on, once a chunk has reached a gap after delivering
    /// events: the next chunk reports it.
    private var failure: Failure?

    /// `filter`: a read-time filter (`?filter=`), whose outputs stand for each event.
    init(hub: StreamHub, store: EventStore, reads: ReadPool, after position: UInt64, filter: EventFilter? = nil) {
        self.cursor = LogCursor(
            hub: hub, log: PooledStore(store: store, reads: reads), framing: Payloads(filter: filter), from: position + 1, retry: .briefly)
        self.position = position
    }

    /// Events read by one `chunk`, and where the stream stood. Their payloads sit one
    /// after another in one buffer (read straight from SQLite's rows into it), cut by `sizes`.
    struct Chunk: Sendable {
        var bytes = ByteBuffer()
        var sizes: [Int] = []
        /// Nothing more was committed after the chunk's last event.
        var upToDate = false
        /// The stream ended, and the chunk reaches its end.
        var terminal: Terminal?

        var isEmpty: Bool { sizes.isEmpty }

        /// Each event's payload, as a slice of `bytes`.
        var payloads: [ByteBuffer] {
            var rest = bytes
            return sizes.map { rest.readSlice(length: $0)! }
        }

        mutating func append(_ other: Chunk) {
            var more = other.bytes
            if isEmpty { bytes = more } else { bytes.writeBuffer(&more) }
            sizes += other.sizes
        }
    }

    enum Failure: Error {
        /// Events after the position are no longer retained (410 Gone).
        case gone
        /// The stream was deleted.
        case deleted
    }

    static let chunkEvents = 16_384
    static let chunkBytes = 1 << 20

    /// The events after the position, up to a chunk's size; empty and `upToDate` at the tail.
    ///
    /// (The async functions here hold only what crosses their waits, and what they do with
    /// each step is plain functions the compiler is told not to inline: an SSE reader's
    /// connection task keeps, for as long as it is open, the slabs its deepest call needed.)
    @inline(never)
    mutating func chunk() async throws -> Chunk {
        if let failure { throw failure }
        let chunk = try await collect()
        count(chunk)
        return chunk
    }

    @inline(never)
    private func count(_ chunk: Chunk) {
        cursor.hub.delivered(events: chunk.sizes.count, bytes: chunk.bytes.readableBytes)
    }

    private mutating func collect() async throws -> Chunk {
        var chunk = Chunk()
        var budget = Self.chunkBytes
        while budget > 0, chunk.sizes.count < Self.chunkEvents {
            let step = try await cursor.move(limit: Self.chunkEvents - chunk.sizes.count, byteBudget: budget)
            if try take(step, into: &chunk, budget: &budget) { break }
        }
        return chunk
    }

    /// One step of the cursor into the chunk; whether the chunk is done.
    @inline(never)
    private mutating func take(_ step: LogCursor<PooledStore, Payloads>.Move, into chunk: inout Chunk, budget: inout Int) throws -> Bool {
        switch step {
        case .ring(let entries):
            for entry in entries {
                budget -= entry.payload.count
                guard let filter = cursor.framing.filter else {
                    chunk.bytes.writeBytes(entry.payload)
                    chunk.sizes.append(entry.payload.count)
                    continue
                }
                for output in filter.outputs(entry.payload) {
                    chunk.bytes.writeBytes(output)
                    chunk.sizes.append(output.count)
                }
            }
            position = entries.last?.sequence ?? position
            return false
        case .stored(let page):
            chunk.append(page.body)
            budget -= page.payloadBytes
            position = page.last
            return false
        case .gap:
            chunk = try stop(chunk, .gone)
            return true
        case .deleted:
            throw Failure.deleted
        case .caughtUp:
            chunk.upToDate = true
            return true
        case .ended(let terminal, _):
            chunk.upToDate = true
            chunk.terminal = terminal
            return true
        }
    }

    /// A gap: an error now if nothing came before it, else the events so far, and the
    /// error next time. An HTTP reader never skips a gap: its offset must
    /// say exactly where it is.
    private mutating func stop(_ chunk: Chunk, _ reason: Failure) throws -> Chunk {
        if chunk.isEmpty { throw reason }
        failure = reason
        return chunk
    }

    /// What a wait for the next commit watches (`LogCursor.watched`).
    var watched: (hub: StreamHub, after: UInt64) { cursor.watched }
}

/// An HTTP read's stored pages: the payloads alone, one after another (or a filter's
/// outputs for each).
struct Payloads: LogFraming {
    var filter: EventFilter? = nil

    func emptyPage() -> HTTPCursor.Chunk { HTTPCursor.Chunk() }

    func append(
        sequence: UInt64, time: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, trace: UnsafeRawBufferPointer?,
        to page: inout HTTPCursor.Chunk
    ) {
        guard let filter else {
            page.bytes.writeBytes(payload)
            page.sizes.append(payload.count)
            return
        }
        for output in filter.outputs(payload) {
            page.bytes.writeBytes(output)
            page.sizes.append(output.count)
        }
    }
}
