import NIOCore
import ReplayProtocol
import ReplayStore

/// Where a connection's subscriptions write: through NIO's async writer, so a write
/// suspends while the socket is not writable.
struct SubscriberOutput: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    func write(_ buffer: ByteBuffer) async throws {
        try await outbound.write(buffer)
    }

    /// Several buffers in one write (one `writev` where they fit).
    func writeMany(_ buffers: [ByteBuffer]) async throws {
        try await outbound.write(contentsOf: buffers)
    }
}

/// One subscription: a cursor `next` over its stream's log, and the loop that moves it.
///
/// Catch-up and live delivery are one code path: at each step the hub says whether the
/// next events are in the tail ring, in SQLite, gone (a gap), not there yet (park until a
/// commit), or whether the stream ended. Writing suspends while the socket is not
/// writable, so a slow subscriber costs its position, not a buffer, and resumes from the
/// store where it left off.
struct Subscription: Sendable {
    let stream: String
    let sid: String
    let hub: StreamHub
    let store: EventStore
    let reads: ReadPool
    let phase: SubscriptionPhase
    let output: SubscriberOutput

    static let pageEvents = 2048
    static let pageBytes = 1024 * 1024
    /// Payloads from this size on are sent from the ring's shared buffer (only the EVENT
    /// line is this subscriber's); smaller ones are copied into the subscriber's buffer,
    /// where a copy costs less than a buffer of their own in the write.
    static let sharedPayloadMinimum = 512

    /// Delivers from `start` until the stream ends or is deleted, the task is cancelled,
    /// or the connection fails. Events after `liveAfter` are live (see `StreamHub.start`).
    func run(from start: UInt64, liveAfter: UInt64) async {
        hub.subscriberJoined()
        defer { hub.subscriberLeft() }
        var next = start
        var retry = Duration.milliseconds(50)
        do {
            while !Task.isCancelled {
                switch hub.step(at: next, liveAfter: liveAfter, limit: Self.pageEvents, byteBudget: Self.pageBytes, sharingFrom: Self.sharedPayloadMinimum) {
                case .send(let entries):
                    try await send(entries)
                    next = (entries.last?.sequence ?? next - 1) + 1
                case .read(let through):
                    do {
                        next = try await catchUp(from: next, through: through)
                        retry = .milliseconds(50)
                    } catch StoreError.unavailable {
                        // The shared database is away (PostgreSQL restarting): keep the
                        // position and read again; the store reconnects on the next read.
                        try await Task.sleep(for: retry)
                        retry = min(retry * 2, .seconds(2))
                    }
                case .gap(let through):
                    try await output.write(ServerFrame.gap(stream: stream, sid: sid, from: next, through: through).bytes)
                    next = through + 1
                case .wait:
                    phase.enter(.parked(after: next - 1))
                    await hub.waitForCommit(after: next - 1)
                    phase.enter(.delivering)
                case .end(let terminal, let last):
                    let frame: ServerFrame =
                        switch terminal {
                        case .completed: .completed(stream: stream, sid: sid, lastSequence: last)
                        case .failed(let message): .failed(stream: stream, sid: sid, lastSequence: last, message: message)
                        }
                    try await output.write(frame.bytes)
                    return
                case .deleted:
                    let message = "stream '\(stream)' was deleted"
                    try await output.write(ServerFrame.failed(stream: stream, sid: sid, lastSequence: next - 1, message: message).bytes)
                    return
                }
            }
        } catch {
            // The connection is gone or the store closed: nothing more can be delivered.
        }
    }

    /// Frames events from the ring: one buffer of this subscriber's lines (and small
    /// payloads, copied), interleaved with the events' shared payload buffers.
    private func send(_ entries: [TailRing.Entry]) async throws {
        DaemonMetrics.delivered(events: entries.count, bytes: entries.reduce(0) { $0 + $1.payload.count })
        var buffers: [ByteBuffer] = []
        var own = ByteBuffer()
        for entry in entries {
            if let shared = entry.shared {
                ServerFrame.writeEventLine(
                    stream: stream, sid: sid, sequence: entry.sequence, time: entry.timestamp.utf8, size: shared.readableBytes,
                    into: &own)
                buffers.append(own)
                buffers.append(shared)
                own = ByteBuffer()
                own.writeStaticString("\r\n")
            } else {
                entry.payload.withUnsafeBytes { payload in
                    ServerFrame.writeEvent(
                        stream: stream, sid: sid, sequence: entry.sequence, time: entry.timestamp.utf8, payload: payload, into: &own)
                }
            }
        }
        if buffers.isEmpty { return try await output.write(own) }
        buffers.append(own)
        try await output.writeMany(buffers)
    }

    /// Catches up over `next...through` from SQLite, page by page; returns the new
    /// position. The next page is read (on the read pool) while the current one is being
    /// written, so the disk and the socket work at the same time.
    private func catchUp(from next: UInt64, through: UInt64) async throws -> UInt64 {
        var page = try await readPage(from: next, through: through)
        while page.next <= through, page.events > 0, !Task.isCancelled {
            let position = page.next
            async let following = readPage(from: position, through: through)
            DaemonMetrics.delivered(events: page.events, bytes: page.payloadBytes)
            try await output.write(page.frames)
            page = try await following
        }
        DaemonMetrics.delivered(events: page.events, bytes: page.payloadBytes)
        try await output.write(page.frames)
        return page.next
    }

    private struct Page: Sendable {
        var frames = ByteBuffer()
        var events = 0
        var payloadBytes = 0
        var next: UInt64
    }

    /// One page of `next...through`, already as wire frames: built on a reader thread,
    /// straight from SQLite's row buffers.
    private func readPage(from next: UInt64, through: UInt64) async throws -> Page {
        let (stream, sid, store) = (self.stream, self.sid, self.store)
        return try await reads.run {
            var page = Page(next: next)
            try store.forEachEvent(in: stream, from: next, through: through, limit: Self.pageEvents, byteBudget: Self.pageBytes) {
                sequence, time, payload in
                // Retention may have trimmed what the hub still listed: that part is a gap.
                if page.events == 0, sequence > page.next {
                    ServerFrame.gap(stream: stream, sid: sid, from: page.next, through: sequence - 1).write(into: &page.frames)
                }
                ServerFrame.writeEvent(stream: stream, sid: sid, sequence: sequence, time: time, payload: payload, into: &page.frames)
                page.events += 1
                page.payloadBytes += payload.count
                page.next = sequence + 1
            }
            if page.events == 0 {
                ServerFrame.gap(stream: stream, sid: sid, from: next, through: through).write(into: &page.frames)
                page.next = through + 1
            }
            return page
        }
    }
}
