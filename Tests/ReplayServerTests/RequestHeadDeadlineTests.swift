import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import NIOPosix
import ReplayStore
import ReplayTesting
import Testing

@testable import ReplayServer

/// The HTTP door's deadline for a connection's next request head, on virtual time: idle
/// counts from the last answer, a request under way is never cut, and the one scheduled
/// check finds a deadline that moved on and waits for it.
@Suite("RequestHeadDeadline")
struct RequestHeadDeadlineTests {
    static let head = HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "http", authority: "x", path: "/v1/stream/s"))

    /// A connected channel with the deadline (10 s) armed at time 0.
    static func connection() throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(timeout: .seconds(10)))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        return (channel, loop)
    }

    @Test func anIdleConnectionClosesItsTimeoutAfterItsLastAnswer() throws {
        let (channel, loop) = try Self.connection()
        loop.advanceTime(by: .seconds(6))
        try channel.writeInbound(Self.head)
        loop.advanceTime(by: .seconds(1))
        try channel.writeOutbound(HTTPResponsePart.end(nil))  // idle again at 7 s

        loop.advanceTime(by: .seconds(3))
        #expect(channel.isActive, "10 s after the connection opened, but 3 s after its answer")
        loop.advanceTime(by: .seconds(6))
        #expect(channel.isActive, "16 s: 9 s after the answer")
        loop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive, "17 s: 10 s after the answer")
    }

    /// A request framed before NIO's codec (`FramedAppendHandler`) is told as a head and an
    /// answer are seen: busy from its head, idle from its answer.
    @Test func aFramedRequestKeepsItBusyFromItsHeadToItsAnswer() throws {
        let (channel, loop) = try Self.connection()
        let deadline = try channel.pipeline.syncOperations.handler(type: RequestHeadDeadline.self)
        loop.advanceTime(by: .seconds(6))
        deadline.framedRequestBegan()
        loop.advanceTime(by: .seconds(20))
        #expect(channel.isActive, "busy: its answer is not written")
        deadline.framedRequestAnswered()
        loop.advanceTime(by: .seconds(9))
        #expect(channel.isActive, "9 s after the answer")
        loop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive, "10 s after the answer")
    }

    @Test func aRequestWaitingForItsAnswerIsNeverCut() throws {
        let (channel, loop) = try Self.connection()
        loop.advanceTime(by: .seconds(1))
        try channel.writeInbound(Self.head)
        loop.advanceTime(by: .seconds(60))
        #expect(channel.isActive, "a minute at the store is the store's business")

        try channel.writeOutbound(HTTPResponsePart.end(nil))
        loop.advanceTime(by: .milliseconds(9_999))
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
    }

    @Test func pipelinedRequestsKeepItBusyUntilTheLastIsAnswered() throws {
        let (channel, loop) = try Self.connection()
        try channel.writeInbound(Self.head)
        try channel.writeInbound(Self.head)
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        loop.advanceTime(by: .seconds(30))
        #expect(channel.isActive, "one of two answered")

        try channel.writeOutbound(HTTPResponsePart.end(nil))
        loop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive)
    }

    @Test func aConnectionAnsweredWithinItsTimeoutStaysOpenWhileItIsUsed() throws {
        let (channel, loop) = try Self.connection()
        // Requests answered one after another, each within the timeout, for a minute.
        for _ in 0..<60 {
            try channel.writeInbound(Self.head)
            loop.advanceTime(by: .seconds(1))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
        }
        #expect(channel.isActive)
        loop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive)
    }

    /// The framed handler finds the deadline in its pipeline and tells it of each POST it
    /// answers: idle counts from that answer, not from the connection's start. (A real
    /// store; the time is the testing loop's.)
    @Test func aFramedPostMovesTheDeadlineToItsAnswer() async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite")
            defer { store.close() }
            _ = try await store.create("s", config: StreamConfig(capacity: nil, contentType: "text/plain"))
            let threads = NIOThreadPool(numberOfThreads: 1)
            threads.start()
            let appends = StoreAppends.make(store: store, threads: threads)
            let channel = NIOAsyncTestingChannel()
            let loop = channel.testingEventLoop
            try await loop.executeInContext {
                try channel.pipeline.syncOperations.addHandler(FramedAppendHandler(appends))
                try channel.pipeline.syncOperations.addHandler(RequestHeadDeadline(timeout: .seconds(10)))
            }
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80))
            await loop.advanceTime(by: .seconds(6))
            let post = "POST /v1/stream/s HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nx"
            try await channel.writeInbound(ByteBuffer(string: post))
            guard case .byteBuffer(let answer) = try await channel.waitForOutboundWrite(as: IOData.self) else {
                Issue.record("no answer")
                return
            }
            #expect(String(buffer: answer).hasPrefix("HTTP/1.1 204"))
            await loop.advanceTime(by: .seconds(9))
            #expect(channel.isActive, "15 s after the connection opened, 9 s after its answer")
            await loop.advanceTime(by: .seconds(1))
            #expect(!channel.isActive, "10 s after the answer")
            try await threads.shutdownGracefully()
        }
    }
}
