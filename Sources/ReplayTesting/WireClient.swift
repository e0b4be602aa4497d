import NIOCore
import NIOPosix
import ReplayProtocol

/// A raw protocol client for tests: sends any bytes, reads decoded server frames. Lives
/// only inside `withWireClient`, which closes the connection when the body returns.
///
/// `@unchecked Sendable`: sending goes through NIO's (Sendable) writer and may happen from
/// any task; reading must stay in one task at a time, which every test respects (one
/// reader task, possibly beside a sender task).
public final class WireClient: @unchecked Sendable {
    private var frames: NIOAsyncChannelInboundStream<ServerFrame>.AsyncIterator
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    /// The HELLO the server sent on connect.
    public private(set) var hello: ServerFrame?

    init(inbound: NIOAsyncChannelInboundStream<ServerFrame>, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
        self.frames = inbound.makeAsyncIterator()
        self.outbound = outbound
    }

    public func send(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    public func send(_ bytes: ByteBuffer) async throws {
        try await outbound.write(bytes)
    }

    public func send(_ commands: ClientCommand...) async throws {
        var buffer = ByteBuffer()
        for command in commands { command.write(into: &buffer) }
        try await outbound.write(buffer)
    }

    /// Closes the writing side; the server still answers what it was sent.
    public func finishSending() {
        outbound.finish()
    }

    /// The next frame; `nil` once the server closed the connection.
    public func next() async throws -> ServerFrame? {
        let frame = try await frames.next()
        if case .hello = frame, hello == nil {
            hello = frame
            return try await next()
        }
        return frame
    }

    /// The next frame, which must exist.
    public func expectFrame() async throws -> ServerFrame {
        guard let frame = try await next() else { throw TestFailure("the server closed the connection") }
        return frame
    }

    /// Reads `count` frames.
    public func frames(_ count: Int) async throws -> [ServerFrame] {
        var out: [ServerFrame] = []
        out.reserveCapacity(count)
        for _ in 0..<count { out.append(try await expectFrame()) }
        return out
    }

    /// Every frame until the server closes the connection.
    public func framesUntilClose() async throws -> [ServerFrame] {
        var out: [ServerFrame] = []
        while let frame = try await next() { out.append(frame) }
        return out
    }
}

/// Connects to the daemon at `socketPath`, runs `body`, closes.
public func withWireClient<T: Sendable>(
    _ socketPath: String, _ body: (WireClient) async throws -> T
) async throws -> T {
    let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
        .channelOption(.allowRemoteHalfClosure, value: true)
        .connect(unixDomainSocketPath: socketPath) { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(ServerFrameDecoder()))
                return try NIOAsyncChannel<ServerFrame, ByteBuffer>(
                    wrappingChannelSynchronously: channel,
                    configuration: .init(isOutboundHalfClosureEnabled: true))
            }
        }
    return try await channel.executeThenClose { inbound, outbound in
        try await body(WireClient(inbound: inbound, outbound: outbound))
    }
}
