import Foundation
import Logging
import NIOCore
import NIOExtras
import ReplayAuth
import ReplayProtocol
import ReplayStore
import ReplaySync

/// A decoded command on its way to the connection's task, with the reply slot it took.
struct RoutedCommand: Sendable {
    let command: InboundCommand
    let slot: ReplyOrder.Slot
}

/// The connection's front door, on its event loop: it decodes the connection's bytes
/// (`CommandDecoder`), and every command takes its reply slot here, in order; a PUB goes
/// straight to the store's writer; everything else goes on to the connection's task.
/// Replies are written from here, in command order.
///
/// Why on the event loop: publishing is the hot path. A PUB decoded here is handed to the
/// writer with no task hop, and the writer tells this connection's `RouterHandle` once per
/// group commit, so all of a batch's `+OK`s cost one hop back here and one write.
///
/// Every command is checked once here, against the connection's rates and the access rules
/// (`SocketRules`), then takes one of three routes, `RouterState.Action`:
/// - `publish`: a PUB or an ATOMIC, straight to the writer (the hot path, above);
/// - `acknowledge`: an ACK or a NACK, to the connection's handler on this event loop, a read
///   burst's together, which submits them to the writer (a work queue's worker sends one per
///   event; through the task, each burst cost a pool thread's wake-up);
/// - `forward`: anything else, to the connection's task (`Connection.perform`), which may
///   wait (a subscription's start, a barrier) without holding the event loop.
/// A command on the first two routes goes there only while no earlier one is still in the
/// task, so that effects keep command order.
///
/// Its decisions are `RouterState`'s, a state machine without I/O: order of effects (a PUB
/// goes to the writer directly only while no earlier command is still on its way through
/// the task), when reading is held (until the connection is admitted, while more than
/// `maxOwed` replies are owed, once draining), and what a draining or closing connection
/// answers. This class performs what it decides.
///
/// It decodes in place, with swift-nio's single-step processor, rather than behind a
/// `ByteToMessageHandler`: a command handed from one handler to the next travels as
/// `NIOAny`, and an `InboundCommand` does not fit an existential's inline buffer, so each
/// one cost an allocation, one per PUB (tools/allocations.sh).
final class CommandRouter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = RoutedCommand
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let store: EventStore
    private let tracer: EventTracer
    private var state: RouterState
    private var order = ReplyOrder()
    private var context: ChannelHandlerContext?
    private(set) var sink: RouterHandle!
    private var whenFlushed: [EventLoopPromise<Void>] = []
    /// Who the peer is to the access rules, set before the connection is admitted.
    private var principal = Principal.unrestricted
    private var logger: Logger?
    /// The connection's ACK and NACK, taken on the event loop (`RouterState.acknowledge`).
    private var acknowledge: (@Sendable ([RoutedCommand]) -> Void)?
    /// ACKs and NACKs of this read burst, handed on together at its end, or before any
    /// other command so that effects keep command order: a worker's burst of ACKs then
    /// reaches the writer as one request, not one each.
    private var heldAcknowledgements: [RoutedCommand] = []
    /// The connection's request and byte rates (`nil`: unlimited): every command is
    /// checked here, in order, before it goes anywhere.
    private var allowance: ClientAllowance?
    private var decoder: NIOSingleStepByteToMessageProcessor<CommandDecoder>
    /// A fatal framing error ended decoding: nothing read after it is a command.
    private var decodingFailed = false
    /// Whether `decoder` is at work: a write that fails while a command is routed closes
    /// the channel at once, and its `channelInactive` must not decode again from inside
    /// (what is left is routed by the loop already under way).
    private var decoding = false

    init(store: EventStore, maxOwed: Int, limits: ClientLimits = .none, tracer: EventTracer = .off, decoder: CommandDecoder = CommandDecoder()) {
        self.decoder = NIOSingleStepByteToMessageProcessor(decoder)
        self.store = store
        self.tracer = tracer
        self.state = RouterState(maxOwed: maxOwed)
        self.allowance = limits.limitsRates ? ClientAllowance(limits, now: NIODeadline.now().uptimeNanoseconds) : nil
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        sink = RouterHandle(router: NIOLoopBound(self, eventLoop: context.eventLoop), channel: context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        handOnAcknowledgements()
        self.context = nil
        sink = nil  // the sink holds the router: let both go once pending commits are told
        acknowledge = nil  // it holds the connection, which holds the sink
        succeedFlushed()
    }

    // MARK: Inbound

    /// The refusal of a command over the connection's rate; `nil`: within it (and taken).
    private func overRate(_ command: ClientCommand) -> ReplayError? {
        guard var allowance else { return nil }
        if case .ping = command { return nil }
        let wait = allowance.admit(bytes: command.payloadBytes, at: NIODeadline.now().uptimeNanoseconds)
        self.allowance = allowance
        guard let wait else { return nil }
        DaemonMetrics.socketRateLimited.increment()
        return ReplayError(
            .rateLimited,
            "this connection is over \(ClientRateLimiter.describe(allowance.limits)) (--rate-limit-*); nothing was done retry_after=\(wait.retryAfterSeconds)")
    }

    /// The refusal of a command the access rules of `--config` do not allow this peer: the
    /// one check of every command, whichever route it then takes.
    private func forbidden(_ command: ClientCommand) -> ReplayError? {
        guard let refusal = SocketRules.refusal(of: command, by: principal) else { return nil }
        logger?.notice("socket: denied", metadata: ["who": "\(principal.name)", "command": "\(command.verb)", "why": "\(refusal.message)"])
        return refusal
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !decodingFailed else { return }
        decoding = true
        defer { decoding = false }
        do {
            try decoder.process(buffer: unwrapInboundIn(data)) { inbound in route(inbound, context: context) }
        } catch {
            fail(decoding: error, context: context)
        }
    }

    /// The end of the input: the commands still buffered whole are routed, a partial one is
    /// dropped (a client that disappears mid-frame).
    private func decodeLast(context: ChannelHandlerContext) {
        guard !decodingFailed, !decoding else { return }
        decoding = true
        defer { decoding = false }
        do {
            try decoder.finishProcessing(seenEOF: true) { inbound in route(inbound, context: context) }
        } catch {
            fail(decoding: error, context: context)
        }
    }

    /// A fatal framing error: passed on to the connection's task, which says why and
    /// closes; what was decoded before it was routed first.
    private func fail(decoding error: any Error, context: ChannelHandlerContext) {
        decodingFailed = true
        context.fireErrorCaught(error)
    }

    private func route(_ inbound: InboundCommand, context: ChannelHandlerContext) {
        // Before the state machine, and before the route is chosen: a refused command must
        // not count as one in the task, and every route is checked here, once. (Without
        // limits or rules, two nil checks: this is the publishing hot path.)
        if allowance != nil || principal.grants != nil, case .command(let command) = inbound, state.isServing,
            let refusal = overRate(command) ?? forbidden(command)
        {
            return fill(order.reserve(), with: .error(refusal))
        }
        let action = state.read(inbound)
        if action != .acknowledge { handOnAcknowledgements() }
        switch action {
        case .discard:
            break
        case .reply(let frame):
            fill(order.reserve(), with: frame)
        case .publish:
            guard case .command(let command) = inbound else { return }
            _ = store.submitPublish(command, sink: sink, token: order.reserve(), tracer: tracer)
        case .acknowledge:
            heldAcknowledgements.append(RoutedCommand(command: inbound, slot: order.reserve()))
        case .forward:
            context.fireChannelRead(wrapInboundOut(RoutedCommand(command: inbound, slot: order.reserve())))
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        handOnAcknowledgements()
        context.fireChannelReadComplete()
    }

    private func handOnAcknowledgements() {
        guard !heldAcknowledgements.isEmpty else { return }
        let held = heldAcknowledgements
        heldAcknowledgements = []
        acknowledge?(held)
    }

    /// The end of the input, or the server's shutdown (`ChannelShouldQuiesceEvent`, from
    /// the listener's quiescing helper, passed on as the end of the input so the task's
    /// inbound stream ends too): answer what was read, read nothing more.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { decodeLast(context: context) }
        handOnAcknowledgements()
        switch event {
        case ChannelEvent.inputClosed:
            state.inputEnded()
            context.fireUserInboundEventTriggered(event)
        case is ChannelShouldQuiesceEvent:
            state.inputEnded()
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        decodeLast(context: context)
        handOnAcknowledgements()
        succeedFlushed()
        context.fireChannelInactive()
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        if state.readRequested(owed: order.owed) { context.read() }
    }

    // MARK: From the task and the writer (always on the event loop)

    /// Who the peer is to the access rules: every command is checked against it here.
    func authorize(_ principal: Principal, logger: Logger) {
        self.principal = principal
        self.logger = logger
    }

    /// The connection may be served: say HELLO, start reading.
    func admit(hello: ServerFrame) {
        guard let context, state.admit() else { return }
        context.writeAndFlush(wrapOutboundOut(hello.bytes), promise: nil)
        resumeReading()
    }

    func fill(_ slot: ReplyOrder.Slot, with frame: ServerFrame, afterWrite: (@Sendable () -> Void)? = nil) {
        order.fill(slot, with: frame, afterWrite: afterWrite)
        writeReady()
    }

    /// Replies filled from other threads since the last hop (`RouterHandle.fill`): one write.
    func fill(_ replies: [RouterHandle.Reply]) {
        for reply in replies { order.fill(reply.slot, with: reply.frame, afterWrite: reply.afterWrite) }
        writeReady()
    }

    /// A reply to no command (a framing error found by the decoder): after every other.
    func send(_ frame: ServerFrame) {
        fill(order.reserve(), with: frame)
    }

    /// The task submitted the effect of one forwarded command.
    func performed() {
        state.performed()
    }

    /// From now on ACK and NACK are handed to `handler` here, on the event loop, when no
    /// earlier command is in the task, a read burst's together: in a work queue, the trip
    /// through the connection's task was a wake-up of a pool thread per burst of ACKs.
    func acknowledge(with handler: @escaping @Sendable ([RoutedCommand]) -> Void) {
        acknowledge = handler
        state.acknowledgementsOnLoop()
    }

    /// One group commit's results for this connection's PUBs.
    func committed(_ results: [AppendResult]) {
        for result in results {
            switch result.sequence {
            case .success(let sequence) where result.more.isEmpty: order.fill(result.token, published: sequence)
            case .success(let sequence): order.fill(result.token, with: .publishedAll([sequence] + result.more))
            case .failure(let error): order.fill(result.token, with: .error(ReplayError(error)))
            }
        }
        writeReady()
    }

    /// Frames that answer no command (a group member's EVENTs): written now, in the order
    /// they reach the event loop, beside the replies. `promise` succeeds once written.
    func write(frames: [ByteBuffer], promise: EventLoopPromise<Void>?) {
        guard let context, let last = frames.last else {
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        for buffer in frames.dropLast() { context.write(wrapOutboundOut(buffer), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(last), promise: promise)
    }

    /// Succeeds once every reply owed has been written (or can no longer be).
    func flushed(_ promise: EventLoopPromise<Void>) {
        if order.owed == 0 || context == nil { return promise.succeed() }
        whenFlushed.append(promise)
    }

    /// "N replies owed (oldest filled or not)", for the state dump.
    var stateDescription: String {
        "\(order.owed) replies owed (oldest \(order.owed == 0 ? "none" : order.isBlockedAtHead ? "unfilled" : "ready")), \(state.inTask) commands in the task"
            + (state.isDraining ? ", draining" : "")
    }

    private func writeReady() {
        guard let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: 0)
        let afterWrites = order.takeReady(into: &buffer)
        guard buffer.readableBytes > 0 else { return }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        for afterWrite in afterWrites { afterWrite() }
        if order.owed == 0 { succeedFlushed() }
        resumeReading()
    }

    private func resumeReading() {
        guard let context, state.resumeReading(owed: order.owed) else { return }
        context.read()
    }

    private func succeedFlushed() {
        let promises = whenFlushed
        whenFlushed = []
        for promise in promises { promise.succeed() }
    }
}

/// The way back to one connection's router, on its event loop: for the writer (results of
/// its PUBs, once per group commit, in one hop) and for the connection's task (every other
/// reply, through `ReplyChannel`).
final class RouterHandle: AppendSink {
    struct Reply: Sendable {
        let slot: ReplyOrder.Slot
        let frame: ServerFrame
        let afterWrite: (@Sendable () -> Void)?
    }

    private let router: NIOLoopBound<CommandRouter>
    private let channel: any NIOCore.Channel
    /// Replies filled and not yet taken to the event loop: the writer answers a batch's
    /// ACKs one by one, and each its own hop and write was most of the event loop's time
    /// in a work queue. The first reply queued schedules the hop; the rest ride on it.
    private let queued = Locked<[Reply]>([])

    init(router: NIOLoopBound<CommandRouter>, channel: any NIOCore.Channel) {
        self.router = router
        self.channel = channel
    }

    /// Whether the socket takes more now (readable from any thread).
    var isWritable: Bool { channel.isWritable }

    /// Writes frames that answer no command, from any thread (`CommandRouter.write(frames:)`).
    func write(_ frames: [ByteBuffer], promise: EventLoopPromise<Void>?) {
        onRouter { $0.write(frames: frames, promise: promise) }
    }

    func appended(_ results: [AppendResult]) {
        onRouter { $0.committed(results) }
    }

    /// Fills a reply slot from any thread; replies filled together are written together.
    /// A hop scheduled later (`onRouter`) still runs after this reply is filled.
    func fill(_ slot: ReplyOrder.Slot, with frame: ServerFrame, afterWrite: (@Sendable () -> Void)?) {
        let first = queued.withLock { queued in
            queued.append(Reply(slot: slot, frame: frame, afterWrite: afterWrite))
            return queued.count == 1
        }
        guard first else { return }
        router.eventLoop.execute { [router, queued] in
            let replies = queued.withLock { queued in
                defer { queued = [] }
                return queued
            }
            router.value.fill(replies)
        }
    }

    /// Runs `body` with the router, on its event loop.
    func onRouter(_ body: @escaping @Sendable (CommandRouter) -> Void) {
        router.eventLoop.execute { [router] in body(router.value) }
    }

    /// `body`'s result, from another thread (waits for the event loop).
    func fromRouter<T: Sendable>(_ body: @escaping @Sendable (CommandRouter) -> T) throws -> T {
        try router.eventLoop.submit { [router] in body(router.value) }.wait()
    }

    /// The event loop's promise for a result the router gives later.
    func makePromise<T: Sendable>(of: T.Type) -> EventLoopPromise<T> {
        router.eventLoop.makePromise(of: T.self)
    }
}

/// What the listener accepts: the channel as the connection's task sees it, and the
/// task's handle on its router.
struct AcceptedConnection: Sendable {
    let channel: NIOAsyncChannel<RoutedCommand, ByteBuffer>
    let replies: ReplyChannel
}

/// The connection task's handle on its `CommandRouter`: every call hops to the event loop.
struct ReplyChannel: Sendable {
    /// Also where the PUBs that reach the task send their results (see `CommandRouter`).
    let sink: RouterHandle

    /// Made on the event loop, once the router is in the pipeline.
    init(_ router: CommandRouter) {
        self.sink = router.sink
    }

    func admit(hello: ServerFrame) {
        sink.onRouter { $0.admit(hello: hello) }
    }

    func authorize(_ principal: Principal, logger: Logger) {
        sink.onRouter { $0.authorize(principal, logger: logger) }
    }

    func fill(_ slot: ReplyOrder.Slot, with frame: ServerFrame, afterWrite: (@Sendable () -> Void)? = nil) {
        sink.fill(slot, with: frame, afterWrite: afterWrite)
    }

    /// A store request's outcome as its reply: `+OK`, or the error.
    func fill(_ slot: ReplyOrder.Slot, with result: Result<Void, StoreError>) {
        switch result {
        case .success: fill(slot, with: .ok)
        case .failure(let error): fill(slot, with: .error(ReplayError(error)))
        }
    }

    func send(_ frame: ServerFrame) {
        sink.onRouter { $0.send(frame) }
    }

    func performed() {
        sink.onRouter { $0.performed() }
    }

    /// ACK and NACK go to `handler` on the event loop from now on (see `CommandRouter`).
    func acknowledge(with handler: @escaping @Sendable ([RoutedCommand]) -> Void) {
        sink.onRouter { $0.acknowledge(with: handler) }
    }

    /// Returns once every reply owed has been written.
    func flushed() async {
        let promise = sink.makePromise(of: Void.self)
        sink.onRouter { $0.flushed(promise) }
        try? await promise.futureResult.get()
    }

    /// For the state dump (from its own queue; waits for the event loop).
    var stateDescription: String {
        (try? sink.fromRouter { $0.stateDescription }) ?? "replies unknown (event loop gone)"
    }
}
