import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTPTypes
import ReplayModel
import ReplayStore
import ReplaySync

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
/// request of hummingbird's under way, within the client's rates (`--rate-limit-requests`,
/// `--rate-limit-bytes`, charged here to the door's one table). Everything else goes on to
/// hummingbird's router, unchanged. A taken POST that its checks or the store refuse is
/// answered here, with the refusal the router would give (`HTTPProblem`, from the one
/// table); only a POST to a stream found past its expiry goes on to the router, which
/// deletes the stream. Doors with token rules (`--auth-keys`) do not install this handler:
/// a token's verification and scopes are the front door's (`FrontDoorResponder`).
///
/// Its decisions, and the order they keep on the connection, are `InlineAppendState`'s.
final class InlineAppendHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    typealias Taken = InlineAppendState.Taken

    private let appends: InlineAppends
    private var state: InlineAppendState
    private var context: ChannelHandlerContext?
    /// The write of the taken POST in the store's hands: one at a time on a connection.
    private var writing: InlineAppends.Write?
    /// The way back from the store, and what the store calls with its answer: made at the
    /// connection's first taken POST (`completion(on:)`).
    private var hop: StoreAnswerHop?
    private var completion: (@Sendable (Result<StreamWriteOutcome, StoreError>) -> Void)?
    /// The request figures this connection's POSTs were last recorded under.
    private var metricsMemo = RequestMetrics.Memo()
    /// Who this connection's requests are charged to, where rates are limited.
    private lazy var client = FrontDoorResponder.client(address: context?.channel.remoteAddress)

    init(_ appends: InlineAppends) {
        self.appends = appends
        self.state = InlineAppendState(maxPayload: appends.maxPayload)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    private func completion(on eventLoop: any EventLoop) -> @Sendable (Result<StreamWriteOutcome, StoreError>) -> Void {
        if let completion { return completion }
        let (hop, completion) = StoreAnswerHop.make(for: self, on: eventLoop) { $0.answered() }
        (self.hop, self.completion) = (hop, completion)
        return completion
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        completion = nil  // a write still in the store's hands keeps the handler until answered
        // A client gone mid-body or before its answer: its request is no longer active.
        state.removed()?.started?.active.decrement()
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        receive(unwrapInboundIn(data), context: context)
    }

    private func receive(_ part: HTTPRequestPart, context: ChannelHandlerContext) {
        switch state.read(part, taken: take(part)) {
        case .forward(let part):
            context.fireChannelRead(wrapInboundOut(part))
        case .keep:
            break
        case .write(let taken):
            write(taken, context: context)
        case .route(let taken, let ended, let then):
            route(taken, ended: ended, context: context)
            if let then { receive(then, context: context) }
        }
    }

    /// The POST this head begins, if it is taken here: plain, and within its client's
    /// rates (over them, the router refuses it, and counts and words the refusal).
    private func take(_ part: HTTPRequestPart) -> Taken? {
        guard case .head(let head) = part, state.takesHeads, let accepted = appends.accepts(head) else { return nil }
        guard !appends.limitsRates || appends.charge(client, bytes: accepted.length) else { return nil }
        return Taken(head: head, stream: accepted.stream, length: accepted.length, started: appends.metrics?.start(.post, memo: &metricsMemo))
    }

    /// Hands a taken request on to hummingbird, as it arrived.
    private func route(_ taken: Taken, ended: Bool, context: ChannelHandlerContext) {
        // The router charges and counts it again.
        if appends.limitsRates { appends.refund(client, bytes: taken.length) }
        taken.started?.active.decrement()
        context.fireChannelRead(wrapInboundOut(.head(taken.head)))
        if let body = taken.body { context.fireChannelRead(wrapInboundOut(.body(body))) }
        if ended { context.fireChannelRead(wrapInboundOut(.end(nil))) }
        if state.releaseQuiesce() { context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
    }

    private func write(_ taken: Taken, context: ChannelHandlerContext) {
        let write: InlineAppends.Write
        switch appends.write(taken.stream, body: taken.body) {
        case .write(let checked): write = checked
        case .refused(let problem): return decided(.refused(problem))
        case .expired:
            guard case .route(let taken, let ended, _) = state.routeWritten() else { return }
            route(taken, ended: ended, context: context)
            return resume(context: context, routed: true)
        }
        // A handler no longer in its pipeline makes no completion (nothing would break the
        // cycle again): the POST is dropped, as one whose client left.
        guard self.context != nil else { return decided(.refused(.internal("the connection closed"))) }
        writing = write
        appends.endpoint.store.write(write.write, tracer: appends.endpoint.tracer, completion: completion(on: context.eventLoop))
    }

    /// On the event loop: the store answered the write in its hands.
    private func answered() {
        guard let write = writing, let result = hop?.take() else { return }
        writing = nil
        written(result, write)
    }

    /// On the event loop: the store's answer. A refusal is worded as the router words it,
    /// with what only the endpoint knows (a closed stream's tail).
    private func written(_ result: Result<StreamWriteOutcome, StoreError>, _ write: InlineAppends.Write) {
        switch result {
        case .success(let outcome): decided(.written(write, outcome))
        case .failure(let error): decided(.refused(appends.endpoint.appendError(error, name: write.write.stream)))
        }
    }

    /// On the event loop: the taken POST is written, or refused.
    private func decided(_ answer: InlineAppendState.Answer) {
        switch state.decided(answer, connected: context != nil) {
        case .answer(let taken, let answer):
            guard let context else { return }
            self.answer(taken, answer, context: context)
        case .drop(let taken):
            taken.started?.active.decrement()
        case .wait, nil:
            break
        }
    }

    /// Writes a taken POST's answer, then goes on with what waited.
    private func answer(_ taken: Taken, _ answer: InlineAppendState.Answer, context: ChannelHandlerContext) {
        let answer = appends.answer(answer, request: taken.head.headerFields)
        InlineAppends.send(answer, closing: InlineAppends.closes(taken.head.headerFields), context: context)
        if let metrics = appends.metrics, let started = taken.started {
            metrics.answered(answer.status, started, route: InlineAppends.route, memo: &metricsMemo)
        }
        DaemonMetrics.inlineAppends.increment()
        state.answered()
        if state.releaseQuiesce() { context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
        if InlineAppends.closes(taken.head.headerFields) { return }  // closing once the answer is written
        resume(context: context, routed: false)
    }

    /// What arrived while a taken POST was unanswered, as if it arrived now.
    /// - Parameter routed: whether the taken POST itself went on to the router, so that
    ///   hummingbird was handed something even if nothing waited.
    private func resume(context: ChannelHandlerContext, routed: Bool) {
        let arrived = state.takeWaiting()
        for part in arrived { receive(part, context: context) }
        // Outside a read from the socket: hummingbird's async channel hands on what it was
        // given at the end of a read, so say that this one ended (if it was given anything).
        if routed || !arrived.isEmpty { context.fireChannelReadComplete() }
        let held = state.releaseHeld()
        if held.inputClosed { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
        if held.read { context.read() }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event, !state.inputClosed() { return }
        if event is ChannelShouldQuiesceEvent, !state.quiesce() { return }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        if state.readRequested() { context.read() }
    }

    /// Hummingbird's answers pass here. After the last end, a taken POST's answer follows
    /// (on the next turn of the loop, not inside hummingbird's write).
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let due = state.wrote(unwrapOutboundIn(data))
        context.write(data, promise: promise)
        guard due else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute { handler.value.answerWaiting() }
    }

    private func answerWaiting() {
        guard let context, let (taken, answer) = state.dueAnswer else { return }
        self.answer(taken, answer, context: context)
    }
}
