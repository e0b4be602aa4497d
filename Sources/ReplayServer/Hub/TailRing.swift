import DequeModule
import Foundation
import NIOCore
import ReplayModel
import ReplayStore

/// The most recent committed events of one stream, in memory as the store committed them
/// (the payload is shared, not copied: the ring is filled on the writer's thread, where
/// every copy counts), bounded by count and bytes. Live subscribers are served from here; only
/// a subscriber that fell behind the ring reads SQLite.
struct TailRing {
    /// A committed event, and its payload as a `ByteBuffer` once a subscriber first sends
    /// it (see `slice`): made once, shared by every subscriber's frame after that.
    struct Entry: Sendable {
        let sequence: UInt64
        let timestamp: String
        let payload: Data
        let traceParent: TraceParent?
        let hash: EventHash?
        let key: EventKey?
        /// When it expires (ms since 1970), if it does: from then on it is not served.
        let expiresAt: Int64?
        var shared: ByteBuffer?
    }

    let maxEvents: Int
    let maxBytes: Int
    private var entries = Deque<Entry>()
    private var bytes = 0
    /// How many entries expire: while none does, a step never reads the clock.
    private(set) var expiring = 0

    init(maxEvents: Int, maxBytes: Int) {
        self.maxEvents = max(1, maxEvents)
        self.maxBytes = maxBytes
    }

    /// The lowest sequence number held, if any.
    /// (Read through the subscript, which borrows the entry, where `first` and `last` copy it:
    /// a retain and a release of its time, payload and buffer, on the writer's thread.)
    var firstSequence: UInt64? { entries.isEmpty ? nil : entries[0].sequence }
    /// The highest sequence number held, if any.
    var lastSequence: UInt64? { entries.isEmpty ? nil : entries[entries.count - 1].sequence }

    mutating func append(_ event: StoredEvent) {
        append(
            Entry(
                sequence: event.sequence, timestamp: event.timestamp, payload: event.payload, traceParent: event.traceParent, hash: event.hash,
                key: event.key, expiresAt: event.expiresAt))
    }

    private mutating func append(_ event: consuming Entry) {
        if let last = lastSequence, event.sequence != last + 1 {
            // Not contiguous (cannot happen with one writer, but a ring with a hole would
            // serve wrong events): start over from this one.
            removeAll()
        }
        bytes += event.payload.count
        if event.expiresAt != nil { expiring += 1 }
        entries.append(event)
        while entries.count > maxEvents || (bytes > maxBytes && entries.count > 1) {
            dropFirst()
        }
    }

    private mutating func dropFirst() {
        let first = entries.removeFirst()
        bytes -= first.payload.count
        if first.expiresAt != nil { expiring -= 1 }
    }

    /// Drops the entries up to `sequence`: events removed from the store (`EventHole`)
    /// are never served from here.
    mutating func removeFirst(through sequence: UInt64) {
        while let first = firstSequence, first <= sequence { dropFirst() }
    }

    mutating func removeAll() {
        entries.removeAll()
        bytes = 0
        expiring = 0
    }

    /// The last of the entries from `sequence` on that expired by `millis`, one after
    /// another; `nil` if the entry at `sequence` has not.
    func expiredRun(from sequence: UInt64, by millis: Int64) -> UInt64? {
        guard let first = firstSequence, sequence >= first else { return nil }
        var index = Int(sequence - first)
        var last: UInt64?
        while index < entries.count, let expiry = entries[index].expiresAt, expiry <= millis {
            last = entries[index].sequence
            index += 1
        }
        return last
    }

    /// Entries from `sequence` on, at most `limit` of them and about `byteBudget` bytes.
    /// Those of `sharingFrom` bytes or more come with their `shared` buffer, made here the
    /// first time any subscriber asks (on its own thread, not the writer's: the commit path
    /// only keeps the store's `Data`).
    /// An entry expired by `expiredBy` (ms) ends the slice before it.
    mutating func slice(
        from sequence: UInt64, limit: Int, byteBudget: Int, sharingFrom minimum: Int = .max, expiredBy: Int64 = .min
    ) -> [Entry] {
        guard let first = entries.first?.sequence, sequence >= first else { return [] }
        var index = Int(sequence - first)
        var out: [Entry] = []
        var used = 0
        while index < entries.count, out.count < limit, out.isEmpty || used < byteBudget,
            (entries[index].expiresAt ?? .max) > expiredBy
        {
            if entries[index].payload.count >= minimum, entries[index].shared == nil {
                entries[index].shared = ByteBuffer(bytes: entries[index].payload)
            }
            out.append(entries[index])
            used += entries[index].payload.count
            index += 1
        }
        return out
    }
}

extension TailRing.Entry {
    /// Calls `body` with the event's trace context as bytes (`nil`: untraced), as the
    /// frame writers take it from the store's rows.
    func withTrace<T>(_ body: (UnsafeRawBufferPointer?) -> T) -> T {
        guard let trace = traceParent else { return body(nil) }
        return trace.bytes.withUnsafeBytes { body($0) }
    }

    /// Calls `body` with the event's trace context and key as bytes (`nil`: none), as the
    /// frame writers take them from the store's rows.
    func withTraceAndKey<T>(_ body: (_ trace: UnsafeRawBufferPointer?, _ key: UnsafeRawBufferPointer?) -> T) -> T {
        withTrace { trace in
            guard let key else { return body(trace, nil) }
            return key.bytes.withUnsafeBytes { body(trace, $0) }
        }
    }
}
