import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
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
        loop.advanceTime(by: .seconds(6))
        channel.pipeline.fireUserInboundEventTriggered(FramedAppendHandler.Request.began)
        loop.advanceTime(by: .seconds(20))
        #expect(channel.isActive, "busy: its answer is not written")
        channel.pipeline.fireUserInboundEventTriggered(FramedAppendHandler.Request.answered)
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
}
