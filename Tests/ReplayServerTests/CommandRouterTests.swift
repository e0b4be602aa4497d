import NIOCore
import NIOEmbedded
import NIOExtras
import ReplayProtocol
import ReplayStore
import ReplayTesting
import Testing

@testable import ReplayServer

/// The connection's front door on its event loop, over a real store.
@Suite("CommandRouter")
struct CommandRouterTests {
    /// What the listener's quiescing helper does to every connection at shutdown: the
    /// router stops taking work (a PING is still answered), and ends the task's input.
    @Test func aQuiescedConnectionAnswersPingsRefusesNewWorkAndEndsItsInput() async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite")
            defer { store.close() }
            let events = EventRecorder()
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandlers([CommandRouter(store: store, maxOwed: 16), events])

            channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
            try channel.writeInbound(InboundCommand.command(.ping))
            try channel.writeInbound(InboundCommand.command(.publish(stream: "s", payload: ByteBuffer(string: "x"))))
            try channel.writeInbound(InboundCommand.command(.list))

            #expect(try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == "PONG\r\n")
            for _ in 0..<2 {
                let refusal = try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) }
                #expect(refusal?.hasPrefix("-ERR shutting_down ") == true)
            }
            #expect(try channel.readInbound(as: RoutedCommand.self) == nil, "nothing reaches the connection's task")
            #expect(events.sawInputClosed)
            #expect(store.streams.isEmpty, "the refused PUB stored nothing")
        }
    }
}

/// Records the user events that pass the router.
private final class EventRecorder: ChannelInboundHandler, @unchecked Sendable {  // EmbeddedChannel: one thread
    typealias InboundIn = RoutedCommand
    private(set) var sawInputClosed = false

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { sawInputClosed = true }
        context.fireUserInboundEventTriggered(event)
    }
}
