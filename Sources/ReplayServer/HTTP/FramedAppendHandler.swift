import HTTPTypes
import NIOCore
import ReplayStore

/// POSTs to a stream read from a plain HTTP/1.1 connection's bytes and answered in bytes,
/// before NIO's HTTP codec: the first handler of the door's pipeline, for as long as its
/// connection sends nothing else.
///
/// Why: NIO's HTTP/1 codec and the conversion to swift-http-types take 18–22 µs of CPU a
/// POST where reading the same bytes and writing the answer take NIO 12–16, more than any
/// part of replay's own (docs/PERFORMANCE.md, "The floors under a POST"). Here a POST's head
/// is read by `FramedRequestHead`, its write and its answer are `InlineAppends`' (the same
/// checks, refusals and fields as `InlineAppendHandler`'s and the router's), and the answer
/// is written as one buffer (`HTTP1AnswerBytes`), which the connection keeps for its next.
///
/// A connection starts here, and leaves for good at its first request that is not such a
/// POST: that request, from its first byte, and everything after it go on to NIO's decoder,
/// and this handler leaves the pipeline (where `InlineAppendHandler` takes the plain POSTs
/// that come after, between hummingbird's requests). So NIO's decoder and encoder see
/// whole requests and their own answers only, and what they pair (a request's method with
/// its answer) stays paired. A POST is taken here in the cases `InlineAppendHandler` takes
/// it (`InlineAppends.accepts`); one whose stream is past its expiry leaves, whole, for the
/// router, which deletes the stream.
///
/// While a POST's write is at the store, what arrives waits here, and reading stops once
/// anything does; the client's end of input and a graceful shutdown's quiesce wait for the
/// answer too. `RequestHeadDeadline` is told when a head has arrived and when its answer
/// is written, as it sees NIO's. Its decisions are `FramedAppendState`'s.
final class FramedAppendHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    typealias Taken = FramedAppendState.Taken

    /// The longest head read here; a longer one goes to NIO's decoder, with its own limits.
    static let maxHeadLength = 8_192

    private let appends: InlineAppends
    private var state = FramedAppendState(maxHeadLength: FramedAppendHandler.maxHeadLength)
    private var context: ChannelHandlerContext?
    /// The write of the taken POST in the store's hands.
    private var writing: InlineAppends.Write?
    /// The way back from the store, and what the store calls with its answer: made at the
    /// connection's first taken POST (`completion(on:)`).
    private var hop: StoreAnswerHop?
    private var completion: (@Sendable (Result<StreamWriteOutcome, StoreError>) -> Void)?
    /// The last answer's buffer, written again once the socket has let go of it.
    private var answerBuffer: ByteBuffer?
    /// The request figures this connection's POSTs were last recorded under.
    private var metricsMemo = RequestMetrics.Memo()
    /// Who this connection's requests are charged to, where rates are limited.
    private lazy var client = FrontDoorResponder.client(address: context?.channel.remoteAddress)
    /// The connection's head deadline, told of each request taken here; found at the first,
    /// when the pipeline is whole.
    private lazy var deadline = try? context?.pipeline.syncOperations.handler(type: RequestHeadDeadline.self)

    init(_ appends: InlineAppends) {
        self.appends = appends
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        completion = nil  // a write still in the store's hands keeps the handler until answered
        // A client gone mid-body: its request is no longer active.
        state.removed()?.started?.active.decrement()
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state.receive(unwrapInboundIn(data)) {
        case .kept: proceed(context: context, inRead: true)
        case .forward: context.fireChannelRead(data)
        case .drop: break
        }
    }

    /// Takes the requests that have arrived whole, one at a time: until one is at the store,
    /// more must arrive, or one is not taken here (then everything goes on to NIO).
    /// - Parameter inRead: whether this runs inside a read from the socket.
    private func proceed(context: ChannelHandlerContext, inRead: Bool) {
        while true {
            switch state.next() {
            case .wait:
                return
            case .leave:
                return leave(state.leave(), context: context, inRead: inRead)
            case .head(let head):
                guard let taken = take(head) else { return leave(state.leave(), context: context, inRead: inRead) }
                deadline?.framedRequestBegan()
                state.took(taken)
            case .write(let taken, let request):
                write(taken, request: request, context: context, inRead: inRead)
            }
        }
    }

    /// The POST this head begins, if it is taken here: plain, and within its client's
    /// rates (over them, the router refuses it, and counts and words the refusal).
    private func take(_ head: FramedRequestHead) -> Taken? {
        guard let accepted = appends.accepts(post: head.target, fields: head.fields) else { return nil }
        guard !appends.limitsRates || appends.charge(client, bytes: accepted.length) else { return nil }
        return Taken(
            fields: head.fields, stream: accepted.stream, length: accepted.length, headLength: head.length,
            started: appends.metrics?.start(.post, memo: &metricsMemo))
    }

    /// Checks the whole POST and hands its write to the store; `request` is its bytes, for
    /// the router if its stream has expired.
    private func write(_ taken: Taken, request: ByteBuffer, context: ChannelHandlerContext, inRead: Bool) {
        let body = request.getSlice(at: request.readerIndex + taken.headLength, length: taken.length)
        switch appends.write(taken.stream, body: body) {
        case .write(let write):
            writing = write
            appends.endpoint.store.write(write.write, tracer: appends.endpoint.tracer, completion: completion(on: context.eventLoop))
        case .refused(let problem):
            answer(.refused(problem), context: context)
        case .expired:
            // Whole, to the router, which deletes the stream.
            leave(state.leave(returning: request), context: context, inRead: inRead)
        }
    }

    private func completion(on eventLoop: any EventLoop) -> @Sendable (Result<StreamWriteOutcome, StoreError>) -> Void {
        if let completion { return completion }
        let (hop, completion) = StoreAnswerHop.make(for: self, on: eventLoop) { $0.answered() }
        (self.hop, self.completion) = (hop, completion)
        return completion
    }

    /// On the event loop: the store answered the write in its hands.
    private func answered() {
        guard writing != nil, let result = hop?.take(), let write = writing.take() else { return }
        let decided: InlineAppendState.Answer =
            switch result {
            case .success(let outcome): .written(write, outcome)
            case .failure(let error): .refused(appends.endpoint.appendError(error, name: write.write.stream))
            }
        guard let context else {
            // The connection closed: the POST is no longer an active request.
            state.dropped()?.started?.active.decrement()
            return
        }
        answer(decided, context: context)
        proceed(context: context, inRead: false)
        releaseHeld(context: context)
    }

    /// Writes the taken POST's answer.
    private func answer(_ decided: InlineAppendState.Answer, context: ChannelHandlerContext) {
        guard case .writing(let taken) = state.phase else { return }
        let closing = InlineAppends.closes(taken.fields)
        _ = state.answered(closing: closing)
        var buffer = answerBuffer.take() ?? context.channel.allocator.buffer(capacity: 256)
        buffer.clear()
        let status = appends.writeAnswer(decided, request: taken.fields, into: &buffer)
        if let metrics = appends.metrics, let started = taken.started {
            metrics.answered(status, started, route: InlineAppends.route, memo: &metricsMemo)
        }
        DaemonMetrics.inlineAppends.increment()
        DaemonMetrics.framedAppends.increment()
        deadline?.framedRequestAnswered()
        guard !closing else {
            // As hummingbird does for `Connection: close`: no more requests on this connection.
            let channel = context.channel
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.whenComplete { _ in channel.close(promise: nil) }
            context.writeAndFlush(wrapOutboundOut(.byteBuffer(buffer)), promise: written)
            return
        }
        context.writeAndFlush(wrapOutboundOut(.byteBuffer(buffer)), promise: nil)
        answerBuffer = buffer
    }

    /// Hands the connection on to NIO's decoder: what has arrived, then what was held (a
    /// request cut short by the end of input goes on too, and NIO's decoder ends it as it
    /// ends any), and this handler leaves the pipeline, after which its context passes
    /// nothing on.
    private func leave(_ leaving: FramedAppendState.Leaving, context: ChannelHandlerContext, inRead: Bool) {
        if let taken = leaving.untaken {
            // Not taken after all: NIO's decoder reads it from its head, and the router
            // charges, counts and answers it.
            if appends.limitsRates { appends.refund(client, bytes: taken.length) }
            taken.started?.active.decrement()
            deadline?.framedRequestAnswered()
        }
        if let bytes = leaving.bytes {
            context.fireChannelRead(wrapInboundOut(bytes))
            // Outside a read from the socket: hummingbird's async channel hands on what it
            // was given at the end of a read, so say that this one ended.
            if !inRead { context.fireChannelReadComplete() }
        }
        if leaving.held.inputClosed { context.fireUserInboundEventTriggered(ChannelEvent.inputClosed) }
        if leaving.held.quiesce { context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
        if leaving.held.read { context.read() }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// What was held while a write was at the store, once none is.
    private func releaseHeld(context: ChannelHandlerContext) {
        switch state.releaseHeld() {
        case .none:
            break
        case .leave:
            leave(state.leave(), context: context, inRead: false)
        case .pass(let quiesce, let read):
            if quiesce { context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
            if read { context.read() }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            guard state.inputClosed() else { return releaseHeld(context: context) }
        } else if event is ChannelShouldQuiesceEvent {
            guard state.quiesce() else { return }
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        if state.readRequested() { context.read() }
    }
}
