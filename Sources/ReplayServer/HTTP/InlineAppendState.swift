import HTTPTypes
import NIOCore
import NIOHTTPTypes
import ReplayStore

/// The decisions of `InlineAppendHandler`, without I/O: which requests it takes, when a
/// taken POST's answer may be written, and what waits meanwhile. Its events return
/// actions, as `RouterState`'s do; the handler performs them, and tests drive it directly.
///
/// Order on the connection is kept. A POST is taken only when every request before it has
/// had its answer's head: hummingbird writes a final head once its responder has returned,
/// so what those requests did is done (a stream's appends stay in the order sent). Its own
/// answer is written only after the end of every answer before it. (Waiting for those ends
/// to take it sent the POST after any answer of the router's to the router too: a
/// `Content-Length` answer's end writes no bytes, so the client has read it, and sent its
/// next request, before the end has passed here.) While a taken POST's write is at the
/// store, and while its answer waits, what else arrives waits here (and with anything
/// waiting, reading stops; the end of the client's input waits too), so the next request
/// goes wherever it goes only after this answer.
struct InlineAppendState {
    /// A POST taken here.
    struct Taken {
        let head: HTTPRequest
        let stream: StreamRequest
        /// Its announced length: what this connection's client was charged, where the door
        /// limits rates.
        let length: Int
        /// Active from its head, as the router's requests are.
        let started: RequestMetrics.Started?
        var body: ByteBuffer?

        var bodyBytes: Int { body?.readableBytes ?? 0 }
    }

    /// How a taken POST is answered: its write's outcome, or the refusal of its checks or
    /// of the store.
    enum Answer {
        case written(InlineAppends.Write, StreamWriteOutcome)
        case refused(HTTPProblem)
    }

    enum Phase {
        /// Requests go on to hummingbird.
        case routing
        /// A POST taken here, its body arriving.
        case collecting(Taken)
        /// A taken POST's write at the store.
        case writing(Taken)
        /// Its answer, waiting for the end of the router's answers before it. Boxed: the
        /// write and its outcome are over 600 bytes, which every connection's state would
        /// carry inline for as long as it lives (an SSE reader's, for hours).
        indirect case answering(Taken, Answer)
    }

    /// What to do with a part of a request.
    enum InboundAction {
        /// Hand it on to hummingbird.
        case forward(HTTPRequestPart)
        /// Keep it: it is part of the POST taken, or waits behind its answer.
        case keep
        /// The taken POST is whole: check it and write it.
        case write(Taken)
        /// Hand the taken POST on to hummingbird as it arrived (with its end if `ended`),
        /// then read `then` again, if there is one.
        case route(Taken, ended: Bool, then: HTTPRequestPart?)
    }

    /// What to do once a taken POST is decided (written, or refused).
    enum AnswerAction {
        /// Answer it now.
        case answer(Taken, Answer)
        /// Nothing yet: it waits for the end of the router's answers before it.
        case wait
        /// The connection is gone: it is no longer an active request.
        case drop(Taken)
    }

    private(set) var phase = Phase.routing
    /// The largest body taken here (`--max-payload`).
    let maxPayload: Int
    /// Requests handed to hummingbird whose answer's head has not passed here: what they
    /// do may still be under way.
    private var unheaded = 0
    /// Requests handed to hummingbird whose answer's end has not passed here.
    private var unanswered = 0
    /// What arrived while a taken POST was unanswered, in order.
    private var waiting: [HTTPRequestPart] = []
    /// Held while a taken POST is unanswered: a `read` once something arrived behind it
    /// (with nothing behind it, reading goes on: stopping and starting it again would cost
    /// every POST two changes of the socket's registration with epoll), and the end of the
    /// input; a quiesce from the POST's head.
    private var held = HeldSignals()

    init(maxPayload: Int) {
        self.maxPayload = maxPayload
    }

    /// Whether a request head arriving now may be taken: nothing of hummingbird's is under
    /// way and no POST is taken. (Asked first, so that the handler checks and charges a
    /// head only when it could be taken.)
    var takesHeads: Bool {
        guard case .routing = phase else { return false }
        return unheaded == 0
    }

    /// A taken POST is at the store or waiting to be answered.
    var isHolding: Bool {
        switch phase {
        case .writing, .answering: true
        case .routing, .collecting: false
        }
    }

    // MARK: Inbound

    /// A part of a request; `taken` is the head's acceptance, where `takesHeads` allowed
    /// one and the handler accepted it.
    mutating func read(_ part: HTTPRequestPart, taken: Taken? = nil) -> InboundAction {
        switch phase {
        case .routing:
            if let taken {
                phase = .collecting(taken)
                return .keep
            }
            if case .head = part {
                unheaded += 1
                unanswered += 1
            }
            return .forward(part)
        case .collecting(var taken):
            // The phase lets go of the body while it grows, so that it grows in place.
            phase = .routing
            switch part {
            case .head:
                // Not after a head without its end; the decoder does not send it. Kept in order.
                return routed(taken, ended: false, then: part)
            case .body(let chunk):
                if taken.body == nil {
                    taken.body = chunk
                } else {
                    taken.body!.writeImmutableBuffer(chunk)
                }
                // Over the bound (a body longer than its announced length): the router
                // answers 413, as for any POST.
                if taken.bodyBytes > maxPayload { return routed(taken, ended: false, then: nil) }
                phase = .collecting(taken)
                return .keep
            case .end:
                phase = .writing(taken)
                return .write(taken)
            }
        case .writing, .answering:
            waiting.append(part)
            return .keep
        }
    }

    private mutating func routed(_ taken: Taken, ended: Bool, then part: HTTPRequestPart?) -> InboundAction {
        phase = .routing
        unheaded += 1
        unanswered += 1
        return .route(taken, ended: ended, then: part)
    }

    /// The taken POST must go to the router after all (its stream expired, and only the
    /// router deletes it): handed on whole.
    mutating func routeWritten() -> InboundAction? {
        guard case .writing(let taken) = phase else { return nil }
        return routed(taken, ended: true, then: nil)
    }

    /// The taken POST is decided: answered now, or once the router's answers before it
    /// have ended.
    mutating func decided(_ answer: Answer, connected: Bool) -> AnswerAction? {
        guard case .writing(let taken) = phase else { return nil }
        guard connected else {
            phase = .routing
            return .drop(taken)
        }
        if unanswered > 0 {
            phase = .answering(taken, answer)
            return .wait
        }
        return .answer(taken, answer)
    }

    /// The taken POST's answer is written.
    mutating func answered() {
        phase = .routing
    }

    /// What waited behind a taken POST, to be read again now that it is answered (or
    /// routed).
    mutating func takeWaiting() -> [HTTPRequestPart] {
        defer { waiting = [] }
        return waiting
    }

    /// A held read and a held end of input, released once nothing is held.
    mutating func releaseHeld() -> (read: Bool, inputClosed: Bool) {
        guard !isHolding else { return (false, false) }
        defer { (held.read, held.inputClosed) = (false, false) }
        return (held.read, held.inputClosed)
    }

    /// The connection's handler was removed: a POST taken and not yet at the store is no
    /// longer active (one at the store is counted off when its write completes).
    mutating func removed() -> Taken? {
        switch phase {
        case .collecting(let taken), .answering(let taken, _):
            phase = .routing
            return taken
        case .routing, .writing: return nil
        }
    }

    /// The end of the client's input: `true` to pass it on now, `false` when it waits
    /// behind a taken POST's answer (hummingbird would end the connection before it).
    mutating func inputClosed() -> Bool {
        guard isHolding else { return true }
        held.inputClosed = true
        return false
    }

    /// A graceful shutdown's quiesce: `true` to pass it on now.
    mutating func quiesce() -> Bool {
        guard case .routing = phase else {
            held.quiesce = true
            return false
        }
        return true
    }

    /// A held quiesce to pass on, once the taken POST is answered or routed.
    mutating func releaseQuiesce() -> Bool {
        defer { held.quiesce = false }
        return held.quiesce
    }

    // MARK: Outbound

    /// The handler is asked to read: `true` to read now.
    mutating func readRequested() -> Bool {
        guard isHolding, !waiting.isEmpty else { return true }
        held.read = true
        return false
    }

    /// One of hummingbird's answers passed: a final head says what its request did is
    /// done, the end that it has been answered. After the last end, a waiting answer is
    /// due (the handler writes it on the next turn of the loop, not inside hummingbird's
    /// write).
    mutating func wrote(_ part: HTTPResponsePart) -> Bool {
        switch part {
        case .head(let response) where response.status.kind != .informational:
            if unheaded > 0 { unheaded -= 1 }
        case .end:
            if unanswered > 0 { unanswered -= 1 }
        default: break
        }
        return dueAnswer != nil
    }

    /// The answer that waited for the router's, once they have ended.
    var dueAnswer: (Taken, Answer)? {
        guard unanswered == 0, case .answering(let taken, let answer) = phase else { return nil }
        return (taken, answer)
    }
}
