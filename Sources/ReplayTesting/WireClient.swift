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
    private let socketPath: String
    /// The HELLO the server sent on connect.
    public private(set) var hello: ServerFrame?

    /// How long a test waits for any one frame before it fails with the daemon's state. A
    /// frame normally arrives in milliseconds; the wait is long so that a loaded machine or
    /// a sanitizer (many times slower) never fails a correct daemon, and shorter than the
    /// suites' time limits so that a hang says where it stands instead of timing out mute.
    public static var frameDeadline: Duration { underSanitizer ? .seconds(80) : .seconds(20) }

    init(inbound: NIOAsyncChannelInboundStream<ServerFrame>, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, socketPath: String) {
        self.frames = inbound.makeAsyncIterator()
        self.outbound = outbound
        self.socketPath = socketPath
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

    /// The next frame; `nil` once the server closed the connection. Fails after
    /// `frameDeadline` with the daemon's state dump (a subscription acknowledged but never
    /// delivered, or a reply that never came, is a bug to locate, not a slow test).
    public func next() async throws -> ServerFrame? {
        let frame = try await nextWithinDeadline()
        if case .hello = frame, hello == nil {
            hello = frame
            return try await next()
        }
        return frame
    }

    private enum Outcome: Sendable {
        case frame(ServerFrame?)
        case deadlinePassed
    }

    private func nextWithinDeadline() async throws -> ServerFrame? {
        let deadline = Self.frameDeadline
        let outcome = try await withThrowingTaskGroup(of: Outcome.self) { group in
            group.addTask { .frame(try await self.frames.next()) }
            group.addTask {
                try await Task.sleep(for: deadline)
                return .deadlinePassed
            }
            defer { group.cancelAll() }
            return try await group.next() ?? .deadlinePassed
        }
        switch outcome {
        case .frame(let frame):
            return frame
        case .deadlinePassed:
            let state = await TestDaemon.stateDump(socketPath: socketPath)
            throw TestFailure("no frame from replayd within \(deadline).\n\(state)")
        }
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
        try await body(WireClient(inbound: inbound, outbound: outbound, socketPath: socketPath))
    }
}
