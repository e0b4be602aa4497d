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

    /// A slot. A PUB's answer, by far the most common, is its sequence number alone, and an
    /// ACK's a bare `+OK`: such an entry is a word and a tag, moved through the deque
    /// without a copy of a whole `ServerFrame` (the largest of its cases is about 150
    /// bytes), and without reference counting. Every other reply is boxed.
    private enum Entry {
        case unfilled
        case published(UInt64)
        case ok
        case other(Other)

        var isFilled: Bool {
            if case .unfilled = self { false } else { true }
        }
    }

    private final class Other {
        let frame: ServerFrame
        let afterWrite: (@Sendable () -> Void)?

        init(frame: ServerFrame, afterWrite: (@Sendable () -> Void)?) {
            self.frame = frame
            self.afterWrite = afterWrite
        }
    }

    private var entries = Deque<Entry>()
    /// The slot of `entries.first`.
    private var head: Slot = 0

    /// Replies reserved and not yet written.
    var owed: Int { entries.count }

    /// Whether the oldest reply owed is still unfilled (every later one waits behind it).
    var isBlockedAtHead: Bool { entries.first.map { !$0.isFilled } ?? false }

    /// Takes the next slot, in command order.
    mutating func reserve() -> Slot {
        entries.append(.unfilled)
        return head + Slot(entries.count - 1)
    }

    /// Fills a slot; `afterWrite` runs once its reply has been written. A slot already
    /// written or filled is left as it is: a reply is given once.
    mutating func fill(_ slot: Slot, with frame: ServerFrame, afterWrite: (@Sendable () -> Void)? = nil) {
        switch (frame, afterWrite) {
        case (.published(let sequence), nil): fill(slot, .published(sequence))
        case (.ok, nil): fill(slot, .ok)
        default: fill(slot, .other(Other(frame: frame, afterWrite: afterWrite)))
        }
    }

    /// Fills a PUB's slot with its sequence number: `fill(slot, with: .published(sequence:))`
    /// without making the frame.
    mutating func fill(_ slot: Slot, published sequence: UInt64) {
        fill(slot, .published(sequence))
    }

    private mutating func fill(_ slot: Slot, _ entry: Entry) {
        guard slot >= head, slot - head < Slot(entries.count) else { return }
        let index = Int(slot - head)
        guard !entries[index].isFilled else { return }
        entries[index] = entry
    }

    /// Writes the filled replies at the head into `buffer`, in order, and forgets them;
    /// returns what must run once that buffer has been written.
    mutating func takeReady(into buffer: inout ByteBuffer) -> [@Sendable () -> Void] {
        // Room for the replies that leave, made once: grown frame by frame from the empty
        // buffer the router passes, the buffer was reallocated at each doubling, a third of
        // what its replies cost the event loop.
        var room = 0
        loop: for entry in entries {
            switch entry {
            case .unfilled: break loop
            case .published: room += ServerFrame.publishedMaximumBytes
            case .ok: room += 5
            case .other: room += 64  // most are short; a longer one grows the buffer
            }
        }
        buffer.reserveCapacity(minimumWritableBytes: room)
        var afterWrites: [@Sendable () -> Void] = []
        var taken = 0
        loop: for entry in entries {
            switch entry {
            case .unfilled:
                break loop
            case .published(let sequence):
                ServerFrame.writePublished(sequence, into: &buffer)
            case .ok:
                ServerFrame.ok.write(into: &buffer)
            case .other(let other):
                other.frame.write(into: &buffer)
                if let afterWrite = other.afterWrite { afterWrites.append(afterWrite) }
            }
            taken += 1
        }
        entries.removeFirst(taken)
        head += Slot(taken)
        return afterWrites
    }
}
