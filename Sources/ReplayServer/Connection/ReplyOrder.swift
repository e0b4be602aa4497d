import DequeModule
import NIOCore
import ReplayProtocol

/// A connection's replies in command order, whatever order they become ready in: the
/// bookkeeping alone, so that it can be tested alone. `CommandRouter` keeps one on the
/// connection's event loop.
///
/// Each command takes the next slot when it is decoded; a PUB's is filled when its group
/// commit completes, a PING's at once, a SUB's once its start is fixed. Ready replies at
/// the head leave together, in one buffer.
struct ReplyOrder {
    typealias Slot = UInt64

    private struct Entry {
        var frame: ServerFrame?
        var afterWrite: (@Sendable () -> Void)?
    }

    private var entries = Deque<Entry>()
    /// The slot of `entries.first`.
    private var head: Slot = 0

    /// Replies reserved and not yet written.
    var owed: Int { entries.count }

    /// Whether the oldest reply owed is still unfilled (every later one waits behind it).
    var isBlockedAtHead: Bool { entries.first.map { $0.frame == nil } ?? false }

    /// Takes the next slot, in command order.
    mutating func reserve() -> Slot {
        entries.append(Entry())
        return head + Slot(entries.count - 1)
    }

    /// Fills a slot; `afterWrite` runs once its reply has been written. A slot already
    /// written or filled is left as it is: a reply is given once.
    mutating func fill(_ slot: Slot, with frame: ServerFrame, afterWrite: (@Sendable () -> Void)? = nil) {
        guard slot >= head, slot - head < Slot(entries.count) else { return }
        let index = Int(slot - head)
        guard entries[index].frame == nil else { return }
        entries[index] = Entry(frame: frame, afterWrite: afterWrite)
    }

    /// Writes the filled replies at the head into `buffer`, in order, and forgets them;
    /// returns what must run once that buffer has been written.
    mutating func takeReady(into buffer: inout ByteBuffer) -> [@Sendable () -> Void] {
        var afterWrites: [@Sendable () -> Void] = []
        while let first = entries.first, let frame = first.frame {
            frame.write(into: &buffer)
            if let afterWrite = first.afterWrite { afterWrites.append(afterWrite) }
            entries.removeFirst()
            head += 1
        }
        return afterWrites
    }
}
