import NIOCore
import ReplayModel
import ReplayProtocol
import ReplayStore

/// One subscription: a `LogCursor` over its stream, framed as EVENT, GAP, COMPLETED and
/// FAILED lines.
///
/// Catch-up and live delivery are one code path: the cursor says whether the next events
/// come from the tail ring or the store, are gone (a gap), are not there yet (park until a
/// commit), or whether the stream ended. Writing suspends while the socket is not
/// writable, so a slow subscriber costs its position, not a buffer, and resumes from the
/// store where it left off. A store that is away is waited for as long as the
/// subscription lasts.
struct Subscription: Sendable {
    let stream: String
    let sid: String
    let hub: StreamHub
    let log: PooledStore
    let phase: SubscriptionPhase
    let output: SubscriberOutput
    /// A windowed subscription's credit: each page is cut to it, and at zero the cursor
    /// waits for the client's MORE (`nil`: no flow control but the socket's).
    var credit: SubscriptionCredit? = nil
    /// A read-time filter (`SUB … filter=`): each event's outputs go out under its sequence
    /// number, none if it selects nothing.
    var filter: EventFilter? = nil
    /// Whether each event carries its hash-chain link (`SUB … hash=on`).
    var hashes = false
    /// Spans of traced events' deliveries (`--otlp-endpoint`), or `.off`.
    var tracer = EventTracer.off

    static let pageEvents = 2048
    static let pageBytes = 1024 * 1024
    /// Payloads from this size on are sent from the ring's shared buffer (only the EVENT
    /// line is this subscriber's); smaller ones are copied into the subscriber's buffer,
    /// where a copy costs less than a buffer of their own in the write.
    static let sharedPayloadMinimum = 512

    /// Spans of traced events' deliveries; `nil` with tracing off.
    private var delivery: TracedDelivery? {
        tracer.isOn ? TracedDelivery(tracer: tracer, stream: stream) : nil
    }

    /// Delivers from `start` until the stream ends or is deleted, the task is cancelled,
    /// or the connection fails. Events after `liveAfter` are live (see `StreamHub.start`).
    /// `snapshot`: first the current event of every key up to `liveAfter` (`start` is then
    /// `liveAfter + 1`, so the switch to the cursor has no gap and no duplicate).
    func run(from start: UInt64, liveAfter: UInt64, snapshot: Bool = false) async {
        hub.subscriberJoined()
        defer { hub.subscriberLeft() }
        if snapshot, await !sentSnapshot(through: liveAfter) { return }
        var cursor = LogCursor(
            hub: hub, log: log, framing: EventFrames(stream: stream, sid: sid, filter: filter, delivery: delivery, hashes: hashes), from: start,
            liveAfter: liveAfter,
            retry: .untilCancelled, readAhead: credit == nil)
        defer { cursor.stopReadingAhead() }
        do {
            while !Task.isCancelled {
                var limit = Self.pageEvents
                if let credit {
                    if credit.available == 0 { phase.enter(.waitingForCredit(after: cursor.next - 1)) }
                    limit = await credit.take(upTo: limit)
                    if limit == 0 { continue }  // cancelled while waiting for MORE
                    phase.enter(.delivering)
                }
                let (bytes, sharing) = (Self.pageBytes, Self.sharedPayloadMinimum)
                let move =
                    if let move = cursor.moveFromMemory(limit: limit, byteBudget: bytes, sharingFrom: sharing) { move } else {
                        try await cursor.move(limit: limit, byteBudget: bytes, sharingFrom: sharing)
                    }
                if let credit {
                    // What the page did not use goes back before anything waits.
                    let used: Int =
                        switch move {
                        case .ring(let entries): entries.count
                        case .stored(let page): page.events
                        default: 0
                        }
                    credit.give(limit - used)
                }
                switch move {
                case .ring(let entries):
                    if let filter {
                        try await Self.send(
                            entries, through: filter, stream: stream, sid: sid, output: output, hub: hub, delivery: delivery, hashes: hashes)
                    } else {
                        delivery?.delivered(entries)
                        try await Self.send(entries, stream: stream, sid: sid, output: output, hub: hub, hashes: hashes)
                    }
                case .stored(let page):
                    hub.delivered(events: page.events, bytes: page.payloadBytes)
                    try await output.write(page.body)
                case .gap(let from, let through):
                    try await output.write(ServerFrame.gap(stream: stream, sid: sid, from: from, through: through).bytes)
                case .caughtUp:
                    phase.enter(.parked(after: cursor.next - 1))
                    await cursor.waitForCommit()
                    phase.enter(.delivering)
                case .ended(let terminal, let last):
                    let frame: ServerFrame =
                        switch terminal {
                        case .completed: .completed(stream: stream, sid: sid, lastSequence: last)
                        case .failed(let message): .failed(stream: stream, sid: sid, lastSequence: last, message: message)
                        }
                    try await output.write(frame.bytes)
                    return
                case .deleted:
                    let message = "stream '\(stream)' was deleted"
                    try await output.write(ServerFrame.failed(stream: stream, sid: sid, lastSequence: cursor.next - 1, message: message).bytes)
                    return
                }
            }
        } catch let error as StoreError {
            // A corrupt event stops the subscription where it is, with the error that names
            // it: it is neither sent nor skipped. Any other store error is its closing.
            if let frame = error.subscriptionFrame(stream: stream, sid: sid) { try? await output.write(frame.bytes) }
        } catch {
            // The connection is gone or the store closed: nothing more can be delivered.
        }
    }

    /// `sendSnapshot`, and whether the subscription goes on: a corrupt event stops it with
    /// the frame that names it, as the cursor's reads do.
    private func sentSnapshot(through last: UInt64) async -> Bool {
        do {
            try await sendSnapshot(through: last)
            return true
        } catch let error as StoreError {
            if let frame = error.subscriptionFrame(stream: stream, sid: sid) { try? await output.write(frame.bytes) }
            return false
        } catch {
            return false
        }
    }

    /// The current event of every key up to `last`, in sequence order, a page at a time
    /// (its window's credit taken as a cursor's pages take it). An event that retention
    /// removed since the SUB is passed over: it is no longer any key's retained value. A
    /// store that is away is waited for, as the cursor waits for it.
    private func sendSnapshot(through last: UInt64) async throws {
        let retry = CursorRetry.untilCancelled
        let sequences = try await retry.attempts { try await log.snapshot(stream, through: last) }
        let framing = EventFrames(stream: stream, sid: sid, filter: filter, delivery: delivery, hashes: hashes)
        var index = sequences.startIndex
        while index < sequences.endIndex, !Task.isCancelled {
            var limit = Self.pageEvents
            if let credit {
                if credit.available == 0 { phase.enter(.waitingForCredit(after: index == 0 ? 0 : sequences[index - 1])) }
                limit = await credit.take(upTo: limit)
                if limit == 0 { continue }
                phase.enter(.delivering)
            }
            let end = min(index + limit, sequences.endIndex)
            let (page, taken) = try await retry.attempts {
                try await log.read(stream, at: sequences[index..<end], byteBudget: Self.pageBytes, framing: framing)
            }
            credit?.give(limit - page.events)
            index += max(taken, 1)
            guard page.events > 0 else { continue }
            hub.delivered(events: page.events, bytes: page.payloadBytes)
            try await output.write(page.body)
        }
    }

    /// Frames events from the ring: one buffer of this subscriber's lines (and small
    /// payloads, copied), interleaved with the events' shared payload buffers.
    static func send(
        _ entries: [TailRing.Entry], stream: String, sid: String, output: some FrameOutput, hub: StreamHub, hashes: Bool = false
    ) async throws {
        hub.delivered(events: entries.count, bytes: entries.reduce(0) { $0 + $1.payload.count })
        var buffers: [ByteBuffer] = []
        var own = ByteBuffer()
        for entry in entries {
            entry.withTraceAndKey { trace, key in
                if let shared = entry.shared {
                    ServerFrame.writeEventLine(
                        stream: stream, sid: sid, sequence: entry.sequence, time: entry.timestamp.utf8, size: shared.readableBytes,
                        trace: trace, hash: hashes ? entry.hash : nil, key: key, into: &own)
                    buffers.append(own)
                    buffers.append(shared)
                    own = ByteBuffer()
                    own.writeStaticString("\r\n")
                } else {
                    entry.payload.withUnsafeBytes { payload in
                        ServerFrame.writeEvent(
                            stream: stream, sid: sid, sequence: entry.sequence, time: entry.timestamp.utf8, payload: payload, trace: trace,
                            hash: hashes ? entry.hash : nil, key: key, into: &own)
                    }
                }
            }
        }
        if buffers.isEmpty { return try await output.write(own) }
        buffers.append(own)
        try await output.writeMany(buffers)
    }
}

/// A subscription's stored pages: EVENT frames written straight from the store's row
/// buffers on the reader thread (through its filter, if it has one).
struct EventFrames: LogFraming {
    let stream: String
    let sid: String
    var filter: EventFilter? = nil
    /// Spans of its traced events, when tracing is on.
    var delivery: TracedDelivery? = nil
    /// Whether each event carries its hash-chain link (`SUB … hash=on`).
    var hashes = false

    func emptyPage() -> ByteBuffer { ByteBuffer() }

    func append(
        sequence: UInt64, time: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, trace: UnsafeRawBufferPointer?,
        hash: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer?, to page: inout ByteBuffer
    ) {
        let hash = hashes ? hash.flatMap(EventHash.init(bytes:)) : nil
        guard let filter else {
            delivery?.delivered(sequence, trace: trace)
            return ServerFrame.writeEvent(
                stream: stream, sid: sid, sequence: sequence, time: time, payload: payload, trace: trace, hash: hash, key: key, into: &page)
        }
        // An event the filter gives nothing for is not delivered: no span for it.
        let outputs = filter.outputs(payload)
        if !outputs.isEmpty { delivery?.delivered(sequence, trace: trace) }
        for output in outputs {
            output.withUnsafeBytes { output in
                ServerFrame.writeEvent(
                    stream: stream, sid: sid, sequence: sequence, time: time, payload: output, trace: trace, hash: hash, key: key, into: &page)
            }
        }
    }
}

extension Subscription {
    /// Ring events through a read-time filter: each output framed under its event's
    /// sequence number (so a filtered reader resumes where it was), in this reader's buffer.
    static func send(
        _ entries: [TailRing.Entry], through filter: EventFilter, stream: String, sid: String, output: some FrameOutput, hub: StreamHub,
        delivery: TracedDelivery? = nil, hashes: Bool = false
    ) async throws {
        hub.delivered(events: entries.count, bytes: entries.reduce(0) { $0 + $1.payload.count })
        var own = ByteBuffer()
        for entry in entries {
            let results = filter.outputs(entry.payload)
            if !results.isEmpty, let delivery { entry.withTrace { delivery.delivered(entry.sequence, trace: $0) } }
            for result in results {
                entry.withTraceAndKey { trace, key in
                    result.withUnsafeBytes { result in
                        ServerFrame.writeEvent(
                            stream: stream, sid: sid, sequence: entry.sequence, time: entry.timestamp.utf8, payload: result, trace: trace,
                            hash: hashes ? entry.hash : nil, key: key, into: &own)
                    }
                }
            }
        }
        if own.readableBytes > 0 { try await output.write(own) }
    }
}
