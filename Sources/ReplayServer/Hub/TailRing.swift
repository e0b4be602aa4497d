import DequeModule
import NIOCore
import ReplayStore

/// The most recent committed events of one stream, in memory as the store committed them
/// (the payload is shared, not copied: the ring is filled on the writer's thread, where
/// every copy counts), bounded by count and bytes. Live subscribers are served from here; only
/// a subscriber that fell behind the ring reads SQLite.
struct TailRing {
    typealias Entry = StoredEvent

    let maxEvents: Int
    let maxBytes: Int
    private var entries = Deque<Entry>()
    private var bytes = 0

    init(maxEvents: Int, maxBytes: Int) {
        self.maxEvents = max(1, maxEvents)
        self.maxBytes = maxBytes
    }

    /// The lowest sequence number held, if any.
    var firstSequence: UInt64? { entries.first?.sequence }

    mutating func append(_ event: StoredEvent) {
        if let last = entries.last, event.sequence != last.sequence + 1 {
            // Not contiguous (cannot happen with one writer, but a ring with a hole would
            // serve wrong events): start over from this one.
            entries.removeAll()
            bytes = 0
        }
        entries.append(event)
        bytes += event.payload.count
        while entries.count > maxEvents || (bytes > maxBytes && entries.count > 1) {
            bytes -= entries.removeFirst().payload.count
        }
    }

    mutating func removeAll() {
        entries.removeAll()
        bytes = 0
    }

    /// Entries from `sequence` on, at most `limit` of them and about `byteBudget` bytes.
    func slice(from sequence: UInt64, limit: Int, byteBudget: Int) -> [Entry] {
        guard let first = entries.first?.sequence, sequence >= first else { return [] }
        var index = Int(sequence - first)
        var out: [Entry] = []
        var used = 0
        while index < entries.count, out.count < limit, out.isEmpty || used < byteBudget {
            out.append(entries[index])
            used += entries[index].payload.count
            index += 1
        }
        return out
    }
}
