import Foundation
import NIOCore
import ReplayStore

/// A reader of the HTTP front door: a cursor over one stream, moved by the stream's
/// `StreamHub` exactly as a socket subscription is (recent events from the tail ring, older
/// ones from SQLite on the read pool, parking until the next commit), only framed for HTTP.
/// A catch-up or long-poll response takes one `chunk`; an SSE response takes chunks until
/// the stream ends, each written before the next is read, so a stalled reader costs its
/// position, not a buffer.
struct HTTPCursor: Sendable {
    let hub: StreamHub
    let store: EventStore
    let reads: ReadPool
    /// The last event delivered (the offset's sequence number).
    private(set) var position: UInt64

    init(hub: StreamHub, store: EventStore, reads: ReadPool, after position: UInt64) {
        self.hub = hub
        self.store = store
        self.reads = reads
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
    mutating func chunk() async throws -> Chunk {
        let chunk = try await collect()
        DaemonMetrics.delivered(events: chunk.sizes.count, bytes: chunk.bytes.readableBytes)
        return chunk
    }

    private mutating func collect() async throws -> Chunk {
        var chunk = Chunk()
        var budget = Self.chunkBytes
        while budget > 0 {
            let next = position + 1
            switch hub.step(at: next, liveAfter: .max, limit: Self.chunkEvents - chunk.sizes.count, byteBudget: budget) {
            case .send(let entries):
                for entry in entries {
                    chunk.bytes.writeBytes(entry.payload)
                    chunk.sizes.append(entry.payload.count)
                    budget -= entry.payload.count
                }
                position = entries.last?.sequence ?? position
            case .read(let through):
                let (store, name, limit, bytes) = (store, hub.name, Self.chunkEvents - chunk.sizes.count, budget)
                let page = try await reads.run { () -> (first: UInt64?, last: UInt64, bytes: ByteBuffer, sizes: [Int]) in
                    var page: (first: UInt64?, last: UInt64, bytes: ByteBuffer, sizes: [Int]) = (nil, 0, ByteBuffer(), [])
                    try store.forEachEvent(in: name, from: next, through: through, limit: limit, byteBudget: bytes) { sequence, _, payload in
                        if page.first == nil { page.first = sequence }
                        page.last = sequence
                        page.bytes.writeBytes(payload)
                        page.sizes.append(payload.count)
                    }
                    return page
                }
                // Retention trimmed what the hub still listed: the position is gone.
                guard page.first == next else {
                    if chunk.isEmpty { throw Failure.gone }
                    return chunk
                }
                var pageBytes = page.bytes
                if chunk.isEmpty { chunk.bytes = pageBytes } else { chunk.bytes.writeBuffer(&pageBytes) }
                chunk.sizes += page.sizes
                budget -= page.bytes.readableBytes
                position = page.last
            case .gap:
                if chunk.isEmpty { throw Failure.gone }
                return chunk
            case .wait:
                chunk.upToDate = true
                return chunk
            case .end(let terminal, _):
                chunk.upToDate = true
                chunk.terminal = terminal
                return chunk
            case .deleted:
                throw Failure.deleted
            }
            if chunk.sizes.count >= Self.chunkEvents { break }
        }
        return chunk
    }

    /// Returns once something may follow the position, or when the task is cancelled.
    func waitForCommit() async {
        await hub.waitForCommit(after: position)
    }
}
