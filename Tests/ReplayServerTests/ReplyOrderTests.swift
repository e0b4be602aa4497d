import NIOCore
import ReplayCore
import ReplayProtocol
import ReplaySync
import Testing

@testable import ReplayServer

/// Replies leave in command order, whatever order they are filled in, each once.
@Suite("ReplyOrder")
struct ReplyOrderTests {
    @Test func repliesLeaveInCommandOrderAndAfterWriteComesWithTheirBuffer() {
        var order = ReplyOrder()
        let ran = Locked(0)
        let first = order.reserve()
        let second = order.reserve()
        let third = order.reserve()
        order.fill(third, with: .pong)
        order.fill(second, with: .published(sequence: 2), afterWrite: { ran.withLock { $0 += 1 } })
        var buffer = ByteBuffer()
        #expect(order.takeReady(into: &buffer).isEmpty, "nothing leaves while the oldest reply is unfilled")
        #expect(buffer.readableBytes == 0)
        #expect(order.owed == 3 && order.isBlockedAtHead)

        order.fill(first, with: .published(sequence: 1))
        let afterWrites = order.takeReady(into: &buffer)
        #expect(String(buffer: buffer) == "+OK 1\r\n+OK 2\r\nPONG\r\n")
        #expect(afterWrites.count == 1)
        for afterWrite in afterWrites { afterWrite() }
        #expect(ran.withLock { $0 } == 1)
        #expect(order.owed == 0 && !order.isBlockedAtHead)
    }

    @Test func aReplyIsGivenOnceAndUnknownSlotsAreIgnored() {
        var order = ReplyOrder()
        let slot = order.reserve()
        order.fill(slot, with: .ok)
        order.fill(slot, with: .pong)  // already filled: kept as it was
        var buffer = ByteBuffer()
        _ = order.takeReady(into: &buffer)
        order.fill(slot, with: .pong)  // already written
        order.fill(slot + 5, with: .pong)  // never reserved
        _ = order.takeReady(into: &buffer)
        #expect(String(buffer: buffer) == "+OK\r\n")
        let next = order.reserve()
        #expect(next == slot + 1, "slots keep counting after the head moved")
    }

    @Test func aPublishsSequenceNumberIsWrittenAsItsFrameBetweenOtherReplies() {
        var order = ReplyOrder()
        let slots = (0..<5).map { _ in order.reserve() }
        order.fill(slots[0], published: 7)
        order.fill(slots[1], with: .ok)
        order.fill(slots[2], with: .published(sequence: 8))
        order.fill(slots[4], published: 9)
        order.fill(slots[0], published: 70)  // already filled: kept as it was
        var buffer = ByteBuffer()
        _ = order.takeReady(into: &buffer)
        #expect(String(buffer: buffer) == "+OK 7\r\n+OK\r\n+OK 8\r\n", "the slot after them is unfilled")
        #expect(order.owed == 2 && order.isBlockedAtHead)

        order.fill(slots[3], with: .error(ReplayError(.unknownStream, "no such stream")))
        buffer.clear()
        _ = order.takeReady(into: &buffer)
        #expect(String(buffer: buffer) == "-ERR unknown_stream no such stream\r\n+OK 9\r\n")
        #expect(order.owed == 0)
    }
}
