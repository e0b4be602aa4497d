import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import NIOPosix
import ReplayStore
import ReplayTesting
import Testing

@testable import ReplayServer

/// The inline POST's decisions without I/O (`InlineAppendState`), and its handler on an
/// embedded channel over a real store: what it takes, what waits behind a taken POST, and
/// a refusal answered by the handler itself.
@Suite("InlineAppendState")
struct InlineAppendStateTests {
    static let head = HTTPRequest(method: .post, scheme: nil, authority: "x", path: "/v1/stream/s")
    static func taken(_ length: Int = 1) -> InlineAppendState.Taken {
        InlineAppendState.Taken(
            head: head, stream: try! StreamRequest(method: .post, raw: "s", fields: head.headerFields), length: length, started: nil)
    }

    @Test func aTakenPostCollectsItsBodyAndIsWrittenAtItsEnd() {
        var state = InlineAppendState(maxPayload: 8)
        #expect(state.takesHeads)
        guard case .keep = state.read(.head(Self.head), taken: Self.taken(4)) else { Issue.record("not taken"); return }
        #expect(!state.takesHeads, "one POST at a time")
        guard case .keep = state.read(.body(ByteBuffer(string: "ab"))) else { Issue.record("not kept"); return }
        guard case .keep = state.read(.body(ByteBuffer(string: "cd"))) else { Issue.record("not kept"); return }
        guard case .write(let whole) = state.read(.end(nil)) else { Issue.record("not written"); return }
        #expect(whole.body.map { String(buffer: $0) } == "abcd")
        #expect(state.isHolding)
    }

    @Test func aBodyOverTheBoundGoesToTheRouterAsItArrived() {
        var state = InlineAppendState(maxPayload: 3)
        _ = state.read(.head(Self.head), taken: Self.taken(3))
        guard case .route(let taken, let ended, let then) = state.read(.body(ByteBuffer(string: "abcd"))) else {
            Issue.record("not routed")
            return
        }
        #expect(taken.bodyBytes == 4 && !ended && then == nil)
        #expect(!state.takesHeads, "the router's request is under way")
    }

    /// While a taken POST is at the store, what arrives waits, a read is held once something
    /// waits, and the end of the input waits too; all of it comes back once it is answered.
    @Test func whatArrivesBehindATakenPostWaitsForItsAnswer() {
        var state = InlineAppendState(maxPayload: 8)
        _ = state.read(.head(Self.head), taken: Self.taken())
        _ = state.read(.body(ByteBuffer(string: "a")))
        _ = state.read(.end(nil))
        let readsOn = state.readRequested()
        #expect(readsOn, "nothing waits yet: reading goes on")
        guard case .keep = state.read(.head(Self.head)) else { Issue.record("not kept"); return }
        let (reads, closes, quiesces) = (state.readRequested(), state.inputClosed(), state.quiesce())
        #expect(!reads, "held once something waits")
        #expect(!closes && !quiesces)
        guard case .answer = state.decided(.refused(.invalid("no")), connected: true) else { Issue.record("not answered"); return }
        state.answered()
        let quiesce = state.releaseQuiesce()
        #expect(quiesce)
        #expect(state.takeWaiting().count == 1)
        let held = state.releaseHeld()
        #expect(held.read && held.inputClosed)
    }

    /// A taken POST's answer waits for the end of the router's answers before it, and is
    /// due once the last has passed.
    @Test func anAnswerWaitsForTheRoutersAnswersBeforeIt() {
        var state = InlineAppendState(maxPayload: 8)
        guard case .forward = state.read(.head(Self.head)) else { Issue.record("not forwarded"); return }
        _ = state.read(.end(nil))
        #expect(!state.takesHeads, "the router's request has no answer head yet")
        let headDue = state.wrote(.head(HTTPResponse(status: .ok)))
        #expect(!headDue)
        #expect(state.takesHeads, "its head passed: what it did is done")
        _ = state.read(.head(Self.head), taken: Self.taken())
        _ = state.read(.end(nil))
        guard case .wait = state.decided(.refused(.invalid("no")), connected: true) else { Issue.record("did not wait"); return }
        #expect(state.dueAnswer == nil)
        let endDue = state.wrote(.end(nil))
        #expect(endDue)
        #expect(state.dueAnswer != nil)
    }

    @Test func aPostWhoseClientLeftIsDropped() {
        var state = InlineAppendState(maxPayload: 8)
        _ = state.read(.head(Self.head), taken: Self.taken())
        _ = state.read(.end(nil))
        guard case .drop = state.decided(.refused(.invalid("no")), connected: false) else { Issue.record("not dropped"); return }
        #expect(state.takesHeads)
    }

    /// The handler on an embedded channel, over a real store: a POST to a closed stream is
    /// answered by the handler itself, with the table's refusal (409, `Stream-Closed`, its
    /// code), and nothing reaches hummingbird; a GET goes on to it.
    @Test func aRefusedPostIsAnsweredByTheHandlerItself() async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite")
            defer { store.close() }
            _ = try await store.create("s", config: StreamConfig(capacity: nil, contentType: "text/plain"))
            _ = try await store.terminate("s", .completed)
            let threads = NIOThreadPool(numberOfThreads: 1)
            threads.start()
            let appends = StoreAppends.make(store: store, threads: threads)
            let channel = NIOAsyncTestingChannel()
            try await channel.testingEventLoop.executeInContext {
                try channel.pipeline.syncOperations.addHandler(InlineAppendHandler(appends))
            }

            var head = Self.head
            head.headerFields[.contentType] = "text/plain"
            head.headerFields[.contentLength] = "1"
            try await channel.writeInbound(HTTPRequestPart.head(head))
            try await channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "x")))
            try await channel.writeInbound(HTTPRequestPart.end(nil))
            guard case .head(let answer) = try await channel.waitForOutboundWrite(as: HTTPResponsePart.self) else {
                Issue.record("no answer head")
                return
            }
            #expect(answer.status == .conflict)
            #expect(answer.headerFields[.streamClosed] == "true")
            guard case .body(let body) = try await channel.waitForOutboundWrite(as: HTTPResponsePart.self) else {
                Issue.record("no answer body")
                return
            }
            #expect(String(buffer: body).contains("\"code\":\"TERMINATED\""))
            #expect(try await channel.readInbound(as: HTTPRequestPart.self) == nil, "nothing reached hummingbird")

            let get = HTTPRequest(method: .get, scheme: nil, authority: "x", path: "/v1/stream/s")
            try await channel.writeInbound(HTTPRequestPart.head(get))
            #expect(try await channel.readInbound(as: HTTPRequestPart.self) != nil, "a GET goes on")
            try await threads.shutdownGracefully()
        }
    }
}
