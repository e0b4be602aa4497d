import Foundation
import NIOCore
import ReplayModel
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
    /// `keys`: name each keyed event's key (`?keys=on`).
    init(hub: StreamHub, store: EventStore, reads: ReadPool, after position: UInt64, filter: EventFilter? = nil, keys: Bool = false) {
        self.cursor = LogCursor(
            hub: hub, log: PooledStore(store: store, reads: reads), framing: Payloads(filter: filter, keys: keys), from: position + 1,
            retry: .briefly)
        self.position = position
    }

    /// Events read by one `chunk`, and where the stream stood. Their payloads sit one
    /// after another in one buffer (read straight from SQLite's rows into it), cut by `sizes`.
    struct Chunk: Sendable {
        var bytes = ByteBuffer()
        var sizes: [Int] = []
        /// The traced events among them, and the keyed ones for a reader that asked for
        /// keys, in order (none for an untraced stream read without keys).
        var annotated: [AnnotatedMessage] = []
        /// Nothing more was committed after the chunk's last event.
        var upToDate = false
        /// The stream ended, and the chunk reaches its end.
        var terminal: Terminal?
        /// The last event read and its hash-chain link (`Replay-Chain-Hash`); `nil` when
        /// none was read, it has none, or the chunk was cut before it.
        var lastHash: (sequence: UInt64, hash: EventHash)?

        /// The hash-chain link of event `sequence` if the chunk ends with it (a response's
        /// `Replay-Chain-Hash`, an SSE control event's `replayChainHash`).
        func hash(endingAt sequence: UInt64) -> EventHash? {
            lastHash.flatMap { $0.sequence == sequence ? $0.hash : nil }
        }

        var isEmpty: Bool { sizes.isEmpty }

        /// Each event's payload, as a slice of `bytes`.
        var payloads: [ByteBuffer] {
            var rest = bytes
            return sizes.map { rest.readSlice(length: $0)! }
        }

        mutating func append(_ other: Chunk) {
            var more = other.bytes
            let offset = sizes.count
            if isEmpty { bytes = more } else { bytes.writeBuffer(&more) }
            sizes += other.sizes
            annotated += other.annotated.map { $0.moved(by: offset) }
            if let later = other.lastHash { lastHash = later }
        }

        /// Adds one event: its payload, or what `filter` gives for it. The ring's events and
        /// the store's rows both come in here.
        /// `key`: only for a reader that asked for keys.
        mutating func add(
            _ payload: some Collection<UInt8> & ContiguousBytes, sequence: UInt64, traceParent: String?, key: String?, hash: EventHash?,
            through filter: EventFilter?
        ) {
            lastHash = hash.map { (sequence, $0) }
            if let filter { return add(filter.outputs(payload), sequence: sequence, traceParent: traceParent, key: key) }
            guard traceParent == nil && key == nil else {
                return add(CollectionOfOne(payload), sequence: sequence, traceParent: traceParent, key: key)
            }
            bytes.writeBytes(payload)
            sizes.append(payload.count)
        }

        /// Adds an event's outputs (its payload, or a filter's outputs for it); a traced or
        /// keyed event the filter gave nothing for is not named, as no message of it is there.
        mutating func add(_ outputs: some Sequence<some Collection<UInt8>>, sequence: UInt64, traceParent: String?, key: String?) {
            let first = sizes.count
            for output in outputs {
                bytes.writeBytes(output)
                sizes.append(output.count)
            }
            if traceParent != nil || key != nil, sizes.count > first {
                annotated.append(AnnotatedMessage(index: first, sequence: sequence, traceParent: traceParent, key: key))
            }
        }

        /// Ends the chunk before its `limit + 1`th traced or keyed event, or before the one
        /// that takes the headers past `headerBytes` (the first is always kept), so that a
        /// response's headers of trace contexts and keys stay small; the last sequence
        /// number kept, or `nil` when nothing needs cutting.
        mutating func keepAnnotated(atMost limit: Int, headerBytes: Int = HTTPCursor.annotationHeaderBytes) -> UInt64? {
            guard let cut = cut(atMost: limit, headerBytes: headerBytes) else { return nil }
            let first = annotated[cut]
            let kept = sizes[..<first.index].reduce(0, +)
            bytes = bytes.getSlice(at: bytes.readerIndex, length: kept) ?? ByteBuffer()
            sizes.removeSubrange(first.index...)
            annotated.removeSubrange(cut...)
            lastHash = nil
            upToDate = false
            terminal = nil
            return first.sequence - 1
        }

        /// The index in `annotated` of the first event a response leaves to the next one.
        private func cut(atMost limit: Int, headerBytes: Int) -> Int? {
            var used = 0
            for (index, message) in annotated.enumerated() {
                // A trace context's item is about 80 bytes; a key's its length (up to three
                // times that percent-encoded) and its parameters.
                used += (message.traceParent == nil ? 0 : 80) + (message.key.map { 3 * $0.utf8.count + 30 } ?? 0)
                if index >= limit || (index > 0 && used > headerBytes) { return index }
            }
            return nil
        }
    }

    /// About what a response's headers of trace contexts and keys may take: long keys (up
    /// to 256 bytes, three times that as a Display String) reach it before 64 events do.
    static let annotationHeaderBytes = 6 << 10

    /// A traced or keyed event of a chunk: the index of its (first) message, its sequence
    /// number, its publisher's trace context and its key.
    struct AnnotatedMessage: Sendable, Equatable {
        let index: Int
        let sequence: UInt64
        let traceParent: String?
        let key: String?

        func moved(by offset: Int) -> Self {
            Self(index: index + offset, sequence: sequence, traceParent: traceParent, key: key)
        }
    }

    enum Failure: Error {
        /// Events after the position are no longer retained (410 Gone).
        case gone
        /// The stream was deleted.
        case deleted
        /// The next event failed its hash chain's check (`StoreError.corruptEvent`).
        case corrupt(StoreError)
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
        try await chunk(continuing: Partial())
    }

    /// A chunk begun from the hub's memory (`chunkFromMemory`), finished from the store.
    @inline(never)
    mutating func chunk(continuing partial: Partial) async throws -> Chunk {
        if let failure { throw failure }
        let chunk = try await collect(partial)
        count(chunk)
        return chunk
    }

    /// A chunk that the store must finish, and what it may still take.
    struct Partial: Sendable {
        var chunk = Chunk()
        var budget = HTTPCursor.chunkBytes
    }

    /// What `chunkFromMemory` found.
    enum FromMemory {
        /// The whole chunk.
        case chunk(Chunk)
        /// What the hub's memory held before events only the store holds (maybe nothing):
        /// `chunk(continuing:)` finishes it, so that a chunk is cut where it would be
        /// read whole.
        case partial(Partial)
    }

    /// The next chunk from the hub's memory, without an async call, as far as the memory
    /// holds it (a live reader's every step; `ParkedEventStream` takes it so).
    mutating func chunkFromMemory() throws -> FromMemory {
        if let failure { throw failure }
        var partial = Partial()
        while partial.budget > 0, partial.chunk.sizes.count < Self.chunkEvents {
            guard let step = cursor.moveFromMemory(limit: Self.chunkEvents - partial.chunk.sizes.count, byteBudget: partial.budget) else {
                return .partial(partial)
            }
            if try take(step, into: &partial.chunk, budget: &partial.budget) { break }
        }
        count(partial.chunk)
        return .chunk(partial.chunk)
    }

    @inline(never)
    private func count(_ chunk: Chunk) {
        cursor.hub.delivered(events: chunk.sizes.count, bytes: chunk.bytes.readableBytes)
    }

    private mutating func collect(_ partial: Partial) async throws -> Chunk {
        var (chunk, budget) = (partial.chunk, partial.budget)
        while budget > 0, chunk.sizes.count < Self.chunkEvents {
            let step: LogCursor<PooledStore, Payloads>.Move
            do {
                step = try await cursor.move(limit: Self.chunkEvents - chunk.sizes.count, byteBudget: budget)
            } catch let error as StoreError {
                guard case .corruptEvent = error else { throw error }
                // As a gap: the events before it now, the error next time.
                return try stop(chunk, .corrupt(error))
            }
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
                chunk.add(
                    entry.payload, sequence: entry.sequence, traceParent: entry.traceParent?.text,
                    key: cursor.framing.keys ? entry.key?.text : nil, hash: entry.hash, through: cursor.framing.filter)
            }
            position = entries.last?.sequence ?? position
            return false
        case .stored(let page):
            chunk.append(page.body)
            budget -= page.payloadBytes
            position = page.last
            return false
        case .gap(_, let through) where through >= cursor.hub.info.firstSequence:
            // A hole inside the window (expired events): nothing is there to
            // read any more, and the offsets after it are where they were. Passed over, as
            // a Kafka reader passes over compacted offsets; only history before the first
            // retained event is gone.
            position = through
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

    /// Whether its chunks are the same as any other reader's at the same position: read
    /// without a filter or keys, with nothing held back.
    var sharesChunks: Bool { cursor.framing.filter == nil && !cursor.framing.keys && failure == nil && cursor.canSkip }

    /// Moves past the events another reader at the same position framed, counted as
    /// delivered here.
    mutating func skip(_ frame: SharedFrames.Frame) {
        cursor.skip(through: frame.through)
        position = frame.through
        cursor.hub.delivered(events: frame.events, bytes: frame.bytes)
    }
}

/// An HTTP read's stored pages: the payloads alone, one after another (or a filter's
/// outputs for each).
struct Payloads: LogFraming {
    var filter: EventFilter? = nil
    /// Whether the reader asked for each event's key (`?keys=on`).
    var keys = false

    func emptyPage() -> HTTPCursor.Chunk { HTTPCursor.Chunk() }

    func append(
        sequence: UInt64, time: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, trace: UnsafeRawBufferPointer?,
        hash: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer?, to page: inout HTTPCursor.Chunk
    ) {
        page.add(
            payload, sequence: sequence, traceParent: trace.map { String(decoding: $0, as: UTF8.self) },
            key: keys ? key.map { String(decoding: $0, as: UTF8.self) } : nil, hash: hash.flatMap(EventHash.init(bytes:)), through: filter)
    }
}
