import Logging
import NIOCore
import NIOEmbedded
import NIOExtras
import ReplayAuth
import ReplayModel
import ReplayProtocol
import ReplayStore
import ReplaySync
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
            try channel.writeInbound(ClientCommand.ping.bytes)
            try channel.writeInbound(ClientCommand.publish(stream: "s", payload: ByteBuffer(string: "x")).bytes)
            try channel.writeInbound(ClientCommand.list.bytes)

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

extension CommandRouterTests {
    /// A read burst's ACKs reach the connection's handler together at the burst's end (one
    /// request to the writer for a worker's burst), and before any other command read
    /// after them, so effects keep command order.
    @Test func aBurstsAcknowledgementsAreHandedOnTogetherBeforeAnythingAfterThem() async throws {
        try await Self.withRouter { (_: EventStore, router: CommandRouter, channel: EmbeddedChannel) async throws in
            let batches = Locked<[[InboundCommand]]>([])
            router.acknowledge { batch in batches.withLock { $0.append(batch.map(\.command)) } }
            let ack = { (sequence: UInt64) in InboundCommand.command(.ack(sid: "w", sequence: sequence, stream: nil)) }

            for sequence in UInt64(1)...3 { channel.pipeline.fireChannelRead(Self.wire(ack(sequence))) }
            #expect(batches.value.isEmpty, "held until the burst ends")
            channel.pipeline.fireChannelReadComplete()
            #expect(batches.value == [[ack(1), ack(2), ack(3)]])

            channel.pipeline.fireChannelRead(Self.wire(ack(4)))
            channel.pipeline.fireChannelRead(ClientCommand.list.bytes)
            #expect(batches.value.count == 2 && batches.value.last == [ack(4)], "handed on before the LIST went on to the task")
            #expect(try channel.readInbound(as: RoutedCommand.self)?.command == .command(.list))
        }
    }
}

extension CommandRouterTests {
    /// The access rules are checked once, by the router, whichever route a command then
    /// takes: a refused PUB never reaches the writer, a refused INFO never reaches the
    /// task, and an allowed one goes on.
    @Test func everyRouteIsCheckedOnceAgainstTheAccessRules() async throws {
        try await Self.withRouter { (store: EventStore, router: CommandRouter, channel: EmbeddedChannel) async throws in
            let reader = Principal(name: "uid 1000", grants: [Grant(pattern: try StreamPattern.parse("public/**").get(), operations: [.read])])
            router.authorize(reader, logger: Logger(label: "test"))
            router.admit(hello: .hello(version: "test", maxPayload: 1024))
            _ = try channel.readOutbound(as: ByteBuffer.self)

            try channel.writeInbound(ClientCommand.publish(stream: "public/a", payload: ByteBuffer(string: "x")).bytes)
            try channel.writeInbound(ClientCommand.info(stream: "secret").bytes)
            try channel.writeInbound(ClientCommand.info(stream: "public/a").bytes)
            for _ in 0..<2 {
                let refusal = try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) }
                #expect(refusal?.hasPrefix("-ERR forbidden uid 1000 may not") == true, "\(refusal ?? "nothing")")
            }
            #expect(try channel.readInbound(as: RoutedCommand.self)?.command == .command(.info(stream: "public/a")))
            #expect(try channel.readInbound(as: RoutedCommand.self) == nil, "the refused INFO did not reach the task")
            try await store.barrier()
            #expect(store.streams.isEmpty, "the refused PUB stored nothing")
        }
    }
}

extension CommandRouterTests {
    /// The router reads bytes: commands split across reads are whole when they are routed;
    /// at the end of the input the whole ones still buffered are answered and a partial
    /// one (a client gone mid-frame) is dropped, storing nothing.
    @Test func commandsSplitAcrossReadsAreRoutedAndAPartialOneAtTheEndIsDropped() async throws {
        try await Self.withRouter { (store: EventStore, router: CommandRouter, channel: EmbeddedChannel) async throws in
            router.admit(hello: .hello(version: "test", maxPayload: 1024))
            _ = try channel.readOutbound(as: ByteBuffer.self)
            for piece in ["PI", "NG\r\nPI", "NG\r\nPUB s 5\r\nab"] {
                channel.pipeline.fireChannelRead(ByteBuffer(string: piece))
            }
            channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            for _ in 0..<2 {
                #expect(try channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == "PONG\r\n")
            }
            #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "the partial PUB is not answered")
            try await store.barrier()
            #expect(store.streams.isEmpty, "the partial PUB stored nothing")
        }
    }
}

extension CommandRouterTests {
    /// A decoded command as the router reads it: its bytes on the wire.
    static func wire(_ inbound: InboundCommand) -> ByteBuffer {
        guard case .command(let command) = inbound else { preconditionFailure("only commands have bytes") }
        return command.bytes
    }

    /// A router over a real store, on an embedded channel, with nothing behind it but a
    /// recorder.
    static func withRouter(_ body: (EventStore, CommandRouter, EmbeddedChannel) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite")
            defer { store.close() }
            let router = CommandRouter(store: store, maxOwed: 64)
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandlers([router, EventRecorder()])
            try await body(store, router, channel)
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
