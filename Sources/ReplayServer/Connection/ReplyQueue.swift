import DequeModule
import NIOCore
import ReplayCore
import ReplayProtocol

/// Replies in command order, whatever order they become ready in.
///
/// Each command takes a slot when it is read; a PUB's slot is filled when its transaction
/// commits, a PING's at once. The writer sends the ready slots at the head of the queue,
/// several per write, so a pipelining client gets its acknowledgements in order and in
/// few syscalls. The number of slots is what the connection's reader watches to stop
/// reading (backpressure) when a client sends faster than commits complete.
final class ReplyQueue: Sendable {
    final class Slot: Sendable {
        fileprivate let frame = Locked<ServerFrame?>(nil)
        fileprivate let afterWrite: (@Sendable () -> Void)?

        fileprivate init(afterWrite: (@Sendable () -> Void)?) {
            self.afterWrite = afterWrite
        }
    }

    private struct State {
        var slots = Deque<Slot>()
        var finished = false
    }

    private let state = Locked(State())
    private let work = Doorbell()
    private let space = Doorbell()

    var count: Int { state.withLock { $0.slots.count } }

    /// For the daemon's state dump: replies owed, and whether the oldest is still unfilled
    /// (every later reply waits behind it).
    var stateDescription: String {
        state.withLock { state in
            let head = state.slots.first.map { $0.frame.withLock { $0 } == nil ? "unfilled" : "ready" } ?? "none"
            return "\(state.slots.count) replies owed (oldest \(head))"
        }
    }

    /// Takes the next slot; `afterWrite` runs once its reply has been written.
    func reserve(afterWrite: (@Sendable () -> Void)? = nil) -> Slot {
        let slot = Slot(afterWrite: afterWrite)
        state.withLock { $0.slots.append(slot) }
        return slot
    }

    /// Fills a slot (from any thread).
    func fill(_ slot: Slot, with frame: ServerFrame) {
        slot.frame.withLock { $0 = frame }
        work.ring()
    }

    /// Reserves and fills at once.
    func send(_ frame: ServerFrame, afterWrite: (@Sendable () -> Void)? = nil) {
        fill(reserve(afterWrite: afterWrite), with: frame)
    }

    /// Waits while more than `limit` replies are outstanding.
    func waitForSpace(limit: Int) async {
        while count > limit, !Task.isCancelled {
            await space.wait()
        }
    }

    /// No more slots will be reserved; `run` returns once the queue is empty.
    func finish() {
        state.withLock { $0.finished = true }
        work.ring()
    }

    /// Writes replies until finished and empty. Run by one task per connection.
    func run(_ write: (ByteBuffer) async throws -> Void) async throws {
        while !Task.isCancelled {
            let (frames, done) = takeReady()
            if frames.isEmpty {
                if done { return }
                await work.wait()
                continue
            }
            var buffer = ByteBuffer()
            for (frame, _) in frames { frame.write(into: &buffer) }
            try await write(buffer)
            for (_, slot) in frames { slot.afterWrite?() }
            space.ring()
        }
    }

    private func takeReady() -> ([(ServerFrame, Slot)], done: Bool) {
        state.withLock { state in
            var ready: [(ServerFrame, Slot)] = []
            while let head = state.slots.first, ready.count < 512,
                let frame = head.frame.withLock({ $0 })
            {
                state.slots.removeFirst()
                ready.append((frame, head))
            }
            return (ready, state.finished && state.slots.isEmpty)
        }
    }
}
