import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTPTypes
import ReplayModel
import ReplayStore

/// A POST to a stream, served on its connection's event loop: the request is handed to the
/// store's writer from here, and the writer's completion writes the answer from here.
///
/// Why: through hummingbird, a POST crosses threads four times (the event loop hands it to
/// the connection's task in the cooperative pool, the task to the writer, the commit
/// resumes the task, and the task hands the answer back to the event loop), and a profile
/// of appends put most of the daemon's CPU in waking and switching those threads and in
/// the task's bookkeeping. Here it crosses twice, as the socket door's PUB does
/// (`CommandRouter`).
///
/// Only the plain case is taken: a POST to a valid stream name with its length known
/// within `--max-payload`, no `Expect` header or `Connection` other than `keep-alive` or
/// `close` (the connection then closes after the answer), on a connection with no
/// request of hummingbird's unanswered, and a stream that is there and takes the body.
/// Everything else goes on to hummingbird's router, unchanged, and so does a taken POST
/// whose write the store refused: the router answers it as it answers any POST (a refused
/// write changed nothing, so writing it again there gives the same refusal, with the
/// same body and headers, from the one place that words them). Client rates
/// (`--rate-limit-requests`, `--rate-limit-bytes`) are taken here from the door's one
/// table, and a POST over them goes to the router to be refused; a taken POST handed on
/// to the router is given back what it was charged, as the router charges it again.
/// Doors with token rules (`--auth-keys`) do not install this handler: a token's
/// verification and scopes are the front door's (`FrontDoorResponder`).
///
/// Order on the connection is kept. A POST is taken only when every request before it has
/// had its answer's head: hummingbird writes a final head once its responder has returned,
/// so what those requests did is done (a stream's appends stay in the order sent). Its own
/// answer is written only after the end of every answer before it. (Waiting for those ends
/// to take it, as this handler first did, sent the POST after any answer of the router's to
/// the router too: a `Content-Length` answer's end writes no bytes, so the client has read
/// it, and sent its next request, before the end has passed here.) While a taken POST's
/// write is at the store, and while its answer waits, what else arrives waits here (and
/// with anything waiting, reading stops; the end of the client's input waits too), so the
/// next request goes wherever it goes only after this answer.
final class InlineAppendHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Requests go on to hummingbird.
        case routing
        /// A POST taken here, its body arriving.
        case collecting(Taken)
        /// A taken POST's write at the store.
        case writing(Taken)
        /// Written; its answer waits for the end of the router's answers before it. Boxed:
        /// the write and its outcome are over 600 bytes, which every connection's state
        /// would carry inline for as long as it lives (an SSE reader's, for hours).
        indirect case answering(Taken, InlineAppends.Write, StreamWriteOutcome)
    }

    private struct Taken {
        let head: HTTPRequest
        let name: String
        /// Its announced length: what this connection's client was charged, where the door
        /// limits rates.
        let length: Int
        /// Active from its head, as the router's requests are.
        let started: RequestMetrics.Started?
        var body: ByteBuffer?

        var bodyBytes: Int { body?.readableBytes ?? 0 }
    }

    private let appends: InlineAppends
    private var state = State.routing
    /// Requests handed to hummingbird whose answer's head has not passed here: what they do
    /// may still be under way.
    private var unheaded = 0
    /// Requests handed to hummingbird whose answer's end has not passed here.
    private var unanswered = 0
    private var context: ChannelHandlerContext?
    /// What arrived while a taken POST was unanswered, in order.
    private var waiting: [HTTPRequestPart] = []
    /// A `read` asked for while a taken POST was unanswered and something arrived behind it.
    /// (With nothing behind it, reading goes on: stopping and starting it again would cost
    /// every POST two changes of the socket's registration with epoll.)
    private var readHeld = false
    /// The client's end of its input, arrived while a taken POST was unanswered.
    private var inputClosedHeld = false
    /// A graceful shutdown's quiesce, held while a taken POST is unanswered: hummingbird's
    /// connection handler, behind this one, would see an idle connection and close it.
    private var heldQuiesce: ChannelShouldQuiesceEvent?
    /// Who this connection's requests are charged to, where rates are limited.
    private lazy var client = FrontDoorResponder.client(address: context?.channel.remoteAddress)

    init(_ appends: InlineAppends) {
        self.appends = appends
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        // A client gone mid-body or before its answer: its request is no longer active. (One
        // gone during its write is counted off when the write completes.)
        switch state {
        case .collecting(let taken), .answering(let taken, _, _):
            taken.started?.active.decrement()
            state = .routing
        case .routing, .writing: break
        }
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        take(unwrapInboundIn(data), context: context)
    }

    private func take(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch state {
        case .routing:
            if case .head(let head) = part {
                if unheaded == 0, let accepted = appends.accepts(head), isWithinRates(accepted) {
                    state = .collecting(
                        Taken(
                            head: head, name: accepted.name, length: accepted.length, started: appends.metrics?.start(.post)))
                    return
                }
                unheaded += 1
                unanswered += 1
            }
            context.fireChannelRead(wrapInboundOut(part))
        case .collecting(var taken):
            // The state lets go of the body while it grows, so that it grows in place (each
            // branch sets the state again).
            state = .routing
            switch part {
            case .head:
                // Not after a head without its end; the decoder does not send it. Kept in order.
                route(taken, ended: false, context: context)
                take(part, context: context)
            case .body(let chunk):
                if taken.body == nil {
                    taken.body = chunk
                } else {
                    taken.body!.writeImmutableBuffer(chunk)
                }
                state = .collecting(taken)
                // Over the bound (a body longer than its announced length): the router
                // answers 413, as for any POST.
                if taken.bodyBytes > appends.maxPayload { route(taken, ended: false, context: context) }
            case .end:
                write(taken, context: context)
            }
        case .writing, .answering:
            waiting.append(part)
        }
    }

    /// Whether an accepted POST may be taken: on a door that limits client rates, it is
    /// charged to this connection's client if it is within them (over them, the router
    /// refuses it).
    private func isWithinRates(_ accepted: InlineAppends.Accepted) -> Bool {
        !appends.limitsRates || appends.charge(client, bytes: accepted.length)
    }

    /// Hands a taken request on to hummingbird, as it arrived.
    private func route(_ taken: Taken, ended: Bool, context: ChannelHandlerContext) {
        if appends.limitsRates { appends.refund(client, bytes: taken.length) }
        // The router counts it again.
        taken.started?.active.decrement()
        state = .routing
        unheaded += 1
        unanswered += 1
        context.fireChannelRead(wrapInboundOut(.head(taken.head)))
        if let body = taken.body { context.fireChannelRead(wrapInboundOut(.body(body))) }
        if ended { context.fireChannelRead(wrapInboundOut(.end(nil))) }
        releaseQuiesce(context: context)
    }

    private func write(_ taken: Taken, context: ChannelHandlerContext) {
        guard let write = appends.write(taken.name, head: taken.head, body: taken.body) else {
            route(taken, ended: true, context: context)
            return
        }
        state = .writing(taken)
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        appends.endpoint.store.write(write.write) { result in
            handler.eventLoop.execute { handler.value.written(result, write) }
        }
    }

    /// On the event loop: the store's answer.
    private func written(_ result: Result<StreamWriteOutcome, StoreError>, _ write: InlineAppends.Write) {
        guard case .writing(let taken) = state else { return }
        guard let context else {
            taken.started?.active.decrement()
            state = .routing
            return
        }
        switch result {
        case .success(let outcome) where unanswered > 0:
            state = .answering(taken, write, outcome)
        case .success(let outcome):
            answer(taken, write, outcome, context: context)
        case .failure:
            route(taken, ended: true, context: context)
            resume(context: context, routed: true)
        }
    }

    /// Writes a taken POST's answer, then goes on with what waited.
    private func answer(_ taken: Taken, _ write: InlineAppends.Write, _ outcome: StreamWriteOutcome, context: ChannelHandlerContext) {
        let status = appends.answer(outcome, write, head: taken.head, context: context)
        if let metrics = appends.metrics, let started = taken.started { metrics.answered(status, started, route: InlineAppends.route) }
        DaemonMetrics.inlineAppends.increment()
        state = .routing
        releaseQuiesce(context: context)
        if InlineAppends.closes(taken.head) { return }  // closing once the answer is written
        resume(context: context, routed: false)
    }

    /// What arrived while a taken POST was unanswered, as if it arrived now.
    /// - Parameter routed: whether the taken POST itself went on to the router (its write
    ///   refused), so that hummingbird was handed something even if nothing waited.
    private func resume(context: ChannelHandlerContext, routed: Bool) {
        let arrived = waiting
        waiting = []
        for part in arrived { take(part, context: context) }
        // Outside a read from the socket: hummingbird's async channel hands on what it was
        // given at the end of a read, so say that this one ended (if it was given anything).
        if routed || !arrived.isEmpty { context.fireChannelReadComplete() }
        guard !isHolding else { return }
        if inputClosedHeld {
            inputClosedHeld = false
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        if readHeld {
            readHeld = false
            context.read()
        }
    }

    /// A taken POST is at the store or waiting to be answered.
    private var isHolding: Bool {
        switch state {
        case .writing, .answering: true
        case .routing, .collecting: false
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event, isHolding {
            // After the requests that arrived before it: hummingbird would end the
            // connection before the taken POST's answer.
            inputClosedHeld = true
            return
        }
        if let quiesce = event as? ChannelShouldQuiesceEvent {
            switch state {
            case .collecting, .writing, .answering:
                heldQuiesce = quiesce
                return
            case .routing: break
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func releaseQuiesce(context: ChannelHandlerContext) {
        guard let quiesce = heldQuiesce else { return }
        heldQuiesce = nil
        context.fireUserInboundEventTriggered(quiesce)
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        if isHolding, !waiting.isEmpty {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// Hummingbird's answers pass here: a final head says what its request did is done, the
    /// end that it has been answered. After the last end, a taken POST's answer follows (on
    /// the next turn of the loop, not inside hummingbird's write).
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response) where response.status.kind != .informational:
            if unheaded > 0 { unheaded -= 1 }
        case .end:
            if unanswered > 0 { unanswered -= 1 }
        default: break
        }
        context.write(data, promise: promise)
        guard unanswered == 0, case .answering = state else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute { handler.value.answerWaiting() }
    }

    private func answerWaiting() {
        guard unanswered == 0, let context, case .answering(let taken, let write, let outcome) = state else { return }
        answer(taken, write, outcome, context: context)
    }
}
