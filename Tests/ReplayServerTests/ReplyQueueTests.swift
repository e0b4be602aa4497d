import NIOCore
import ReplayCore
import ReplayProtocol
@testable import ReplayServer
import Testing

/// Replies leave in command order, whatever order they are filled in.
@Suite("ReplyQueue")
struct ReplyQueueTests {
    /// Collects what the queue writes.
    final class Written: Sendable {
        let buffers = Locked<[String]>([])
        func append(_ buffer: ByteBuffer) { buffers.withLock { $0.append(String(buffer: buffer)) } }
        var all: String { buffers.withLock { $0.joined() } }
    }

    @Test func repliesLeaveInCommandOrderAndAfterWriteRunsOnceWritten() async throws {
        let queue = ReplyQueue()
        let written = Written()
        let afterWrite = Locked(0)
        let first = queue.reserve()
        let second = queue.reserve(afterWrite: { afterWrite.withLock { $0 += 1 } })
        queue.send(.pong)
        let running = Task { try await queue.run { written.append($0) } }
        queue.fill(second, with: .published(sequence: 2))
        #expect(queue.count == 3, "nothing leaves while the oldest reply is unfilled")
        #expect(queue.stateDescription == "3 replies owed (oldest unfilled)")
        queue.fill(first, with: .published(sequence: 1))
        queue.finish()
        try await running.value
        #expect(written.all == "+OK 1\r\n+OK 2\r\nPONG\r\n")
        #expect(afterWrite.withLock { $0 } == 1)
        #expect(queue.stateDescription == "0 replies owed (oldest none)")
    }
}
