import HTTPTypes
import NIOCore
import ReplayStore
import Testing

@testable import ReplayServer

/// The framed POST's decisions without I/O (`FramedAppendState`): a POST arriving in
/// pieces, one at a time at the store with what arrives behind it kept, and the hand-over
/// to NIO's decoder with every byte not answered and every signal held.
@Suite("FramedAppendState")
struct FramedAppendStateTests {
    static func post(_ body: String, connection: String? = nil) -> String {
        let close = connection.map { "Connection: \($0)\r\n" } ?? ""
        return "POST /v1/stream/s HTTP/1.1\r\nHost: x\r\n\(close)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    static func taken(_ head: FramedRequestHead) -> FramedAppendState.Taken {
        FramedAppendState.Taken(
            fields: head.fields, stream: try! StreamRequest(method: .post, raw: "s", fields: head.fields),
            length: head.contentLength, headLength: head.length, started: nil)
    }

    /// Feeds `text` and takes the head it completes.
    static func takeHead(_ state: inout FramedAppendState, _ text: String) -> FramedAppendState.Taken? {
        #expect(isKept(state.receive(ByteBuffer(string: text))))
        guard case .head(let head) = state.next() else { return nil }
        let taken = taken(head)
        state.took(taken)
        return taken
    }

    static func isKept(_ arrival: FramedAppendState.Arrival) -> Bool {
        if case .kept = arrival { true } else { false }
    }

    static func isWait(_ next: FramedAppendState.Next) -> Bool {
        if case .wait = next { true } else { false }
    }

    /// What a release passes on, if it passes anything on.
    static func passed(_ release: FramedAppendState.Release) -> (quiesce: Bool, read: Bool)? {
        if case .pass(let quiesce, let read) = release { (quiesce, read) } else { nil }
    }

    @Test func aPostInPiecesIsTakenOnceItsHeadAndThenItsBodyAreWhole() throws {
        var state = FramedAppendState(maxHeadLength: 8_192)
        let text = Self.post("hello")
        let cut = text.utf8.count - 12  // in the head's blank line's neighbourhood
        let first = String(decoding: Array(text.utf8)[..<cut], as: UTF8.self)
        let second = String(decoding: Array(text.utf8)[cut...], as: UTF8.self)
        #expect(Self.isKept(state.receive(ByteBuffer(string: first))))
        #expect(Self.isWait(state.next()), "the head has not all arrived")
        #expect(Self.isKept(state.receive(ByteBuffer(string: String(second.prefix(9))))))
        guard case .head(let head) = state.next() else {
            Issue.record("the head is whole")
            return
        }
        state.took(Self.taken(head))
        #expect(Self.isWait(state.next()), "two of the body's five bytes")
        _ = state.receive(ByteBuffer(string: String(second.dropFirst(9))))
        guard case .write(let taken, let request) = state.next() else {
            Issue.record("the POST is whole")
            return
        }
        #expect(taken.length == 5)
        #expect(String(buffer: request) == text, "the request's bytes, head and body")
        #expect(Self.isWait(state.next()), "one at a time: it is at the store")
    }

    /// While a POST is at the store, what arrives is kept and a read is held; the next POST
    /// is read once it is answered, and the read goes on.
    @Test func whatArrivesBehindAPostAtTheStoreWaitsForItsAnswer() throws {
        var state = FramedAppendState(maxHeadLength: 8_192)
        let read = state.readRequested()
        #expect(read, "nothing at the store")
        _ = try #require(Self.takeHead(&state, Self.post("a")))
        guard case .write = state.next() else {
            Issue.record("not written")
            return
        }
        let readsWithNothingBehind = state.readRequested()
        #expect(readsWithNothingBehind, "nothing behind it: reading goes on")
        #expect(Self.isKept(state.receive(ByteBuffer(string: Self.post("b")))))
        #expect(Self.isWait(state.next()))
        let readsWithSomethingBehind = state.readRequested()
        #expect(!readsWithSomethingBehind, "held once something waits")
        #expect(state.answered(closing: false) != nil)
        guard case .head(let second) = state.next() else {
            Issue.record("the second POST is read after the answer")
            return
        }
        #expect(second.contentLength == 1)
        let passed = try #require(Self.passed(state.releaseHeld()), "the held read goes on")
        #expect(passed.read && !passed.quiesce)
    }

    /// A request not read here hands on everything from its first byte; a POST taken
    /// before it, already answered, is not handed on.
    @Test func aRequestNotReadHereHandsOnEveryByteFromItsFirst() throws {
        var state = FramedAppendState(maxHeadLength: 8_192)
        _ = try #require(Self.takeHead(&state, Self.post("a") + "GET /v1/stream/s HTTP/1.1\r\n"))
        guard case .write = state.next() else {
            Issue.record("not written")
            return
        }
        _ = state.answered(closing: false)
        guard case .leave = state.next() else {
            Issue.record("a GET is not read here")
            return
        }
        let leaving = state.leave()
        #expect(leaving.untaken == nil)
        #expect(leaving.bytes.map { String(buffer: $0) } == "GET /v1/stream/s HTTP/1.1\r\n")
        guard case .forward = state.receive(ByteBuffer(string: "Host: x\r\n\r\n")) else {
            Issue.record("after leaving, bytes go on")
            return
        }
        #expect(Self.isWait(state.next()))
    }

    /// A POST to a stream past its expiry goes on whole, followed by what came after it,
    /// and is undone here (the router charges and counts it).
    @Test func aWrittenPostHandedBackGoesOnBeforeWhatFollowedIt() throws {
        var state = FramedAppendState(maxHeadLength: 8_192)
        _ = try #require(Self.takeHead(&state, Self.post("a") + "POST /v1"))
        guard case .write(_, let request) = state.next() else {
            Issue.record("not written")
            return
        }
        let leaving = state.leave(returning: request)
        #expect(leaving.untaken?.length == 1)
        #expect(leaving.bytes.map { String(buffer: $0) } == Self.post("a") + "POST /v1")
    }

    /// The end of the input waits for the answer of a POST at the store, then hands the
    /// connection on with it; a quiesce waits for the POST's answer too.
    @Test func theEndOfInputAndAQuiesceWaitForTheAnswer() throws {
        var state = FramedAppendState(maxHeadLength: 8_192)
        _ = try #require(Self.takeHead(&state, Self.post("a")))
        let quiescesWhileCollecting = state.quiesce()
        #expect(!quiescesWhileCollecting, "a POST under way: not idle")
        guard case .write = state.next() else {
            Issue.record("not written")
            return
        }
        let closesNow = state.inputClosed()
        #expect(!closesNow)
        guard case .none = state.releaseHeld() else {
            Issue.record("nothing is released while the POST is at the store")
            return
        }
        _ = state.answered(closing: false)
        guard case .leave = state.releaseHeld() else {
            Issue.record("the ended input hands the connection on")
            return
        }
        let leaving = state.leave()
        #expect(leaving.held.inputClosed && leaving.held.quiesce)
        #expect(leaving.bytes == nil && leaving.untaken == nil)
        let passes = (state.inputClosed(), state.quiesce())
        #expect(passes == (true, true), "handed on: every signal passes")
    }

    /// A quiesce arriving while the connection waits for a head passes at once; one held
    /// behind a POST passes once the connection is reading again.
    @Test func aQuiescePassesWhenNoPostIsUnderWay() throws {
        var state = FramedAppendState(maxHeadLength: 8_192)
        let idle = state.quiesce()
        #expect(idle)
        _ = try #require(Self.takeHead(&state, Self.post("a")))
        _ = state.next()
        _ = state.quiesce()
        _ = state.answered(closing: false)
        let passed = try #require(Self.passed(state.releaseHeld()), "the quiesce passes once answered")
        #expect(passed.quiesce && !passed.read)
    }

    /// `Connection: close`: nothing after the answer is read here, and what was held is
    /// dropped with the connection.
    @Test func aClosingAnswerEndsTheReading() throws {
        var state = FramedAppendState(maxHeadLength: 8_192)
        _ = try #require(Self.takeHead(&state, Self.post("a", connection: "close") + Self.post("b")))
        _ = state.next()
        _ = state.inputClosed()
        #expect(state.answered(closing: true) != nil)
        #expect(Self.isWait(state.next()), "the POST behind it is not read")
        guard case .none = state.releaseHeld() else {
            Issue.record("nothing held goes on")
            return
        }
        guard case .drop = state.receive(ByteBuffer(string: "x")) else {
            Issue.record("bytes after a closing answer are dropped")
            return
        }
        #expect(!state.isActive)
    }

    /// A head longer than the limit goes to NIO's decoder, searched once across its reads.
    @Test func aHeadOverTheLimitIsHandedOn() {
        var state = FramedAppendState(maxHeadLength: 64)
        _ = state.receive(ByteBuffer(string: "POST /v1/stream/s HTTP/1.1\r\nHost: x\r\n"))
        #expect(Self.isWait(state.next()))
        _ = state.receive(ByteBuffer(string: "X-Long: " + String(repeating: "y", count: 40) + "\r\n"))
        guard case .leave = state.next() else {
            Issue.record("over the limit: not read here")
            return
        }
    }
}
