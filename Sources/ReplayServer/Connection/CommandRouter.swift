import Foundation
import NIOCore
import ReplayCore
import ReplayProtocol
import ReplayStore

/// A decoded command on its way to the connection's task, with the reply slot it took.
struct RoutedCommand: Sendable {
    let command: InboundCommand
    let slot: ReplyOrder.Slot
}

/// The connection's front door, on its event loop: every decoded command takes its reply
/// slot here, in order; a PUB goes straight to the store's writer; everything else goes
/// on to the connection's task. Replies are written from here, in command order.
///
/// Why on the event loop: publishing is the hot path. A PUB decoded here is handed to the
/// writer with no task hop, and the writer tells this connection's `PublishSink` once per
/// group commit, so all of a batch's `+OK`s cost one hop back here and one write.
///
/// Order of effects: a PUB goes to the writer directly only while no earlier command is
/// still on its way through the task (`inTask`); otherwise it follows them through the
/// task, so `COMPLETE s` then `PUB s` still refuses the PUB.
///
/// Reading stops (the `read` is held) until the connection is admitted (its HELLO
/// written), while more than `maxOwed` replies are owed (a client sending faster than
/// commits complete), and once draining.
final class CommandRouter: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = InboundCommand
    typealias InboundOut = RoutedCommand
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let store: EventStore
    private let maxOwed: Int
    private var order = ReplyOrder()
    private var context: ChannelHandlerContext?
    private(set) var sink: PublishSink!
    private var admitted = false
    private var draining = false
    private var closing = false
    private var readHeld = false
    /// Commands forwarded to the task whose effect it has not yet submitted.
    private var inTask = 0
    private var whenFlushed: [EventLoopPromise<Void>] = []

    init(store: EventStore, maxOwed: Int) {
        self.store = store
        self.maxOwed = maxOwed
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        sink = PublishSink(eventLoop: context.eventLoop, router: NIOLoopBound(self, eventLoop: context.eventLoop))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        sink = nil  // the sink holds the router: let both go once pending commits are told
        succeedFlushed()
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let inbound = unwrapInboundIn(data)
        guard !closing else { return }
        let slot = order.reserve()
        if draining {
            let reply: ServerFrame = inbound == .command(.ping)
                ? .pong : .error(ReplayError(.shuttingDown, "replayd is shutting down; reconnect to the next instance"))
            return fill(slot, with: reply)
        }
        switch inbound {
        case .command(.publish(let stream, let payload)) where inTask == 0:
            store.append(Data(payload.readableBytesView), to: stream, sink: sink, token: slot)
        case .command(.ping):
            fill(slot, with: .pong)  // no effect to order: answered here
        case .invalid(let error) where !error.isFatal:
            fill(slot, with: .error(error))
        default:
            if case .invalid = inbound { closing = true }  // the task answers it, then closes
            inTask += 1
            context.fireChannelRead(wrapInboundOut(RoutedCommand(command: inbound, slot: slot)))
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { draining = true }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        succeedFlushed()
        context.fireChannelInactive()
    }

    // MARK: Outbound

    func read(context: ChannelHandlerContext) {
        if admitted, !draining, order.owed <= maxOwed {
            context.read()
        } else {
            readHeld = true
        }
    }

    // MARK: From the task and the writer (always on the event loop)

    /// The connection may be served: say HELLO, start reading.
    func admit(hello: ServerFrame) {
        guard let context, !admitted else { return }
        admitted = true
        context.writeAndFlush(wrapOutboundOut(hello.bytes), promise: nil)
        resumeReading()
    }

    func fill(_ slot: ReplyOrder.Slot, with frame: ServerFrame, afterWrite: (@Sendable () -> Void)? = nil) {
        order.fill(slot, with: frame, afterWrite: afterWrite)
        writeReady()
    }

    /// A reply to no command (a framing error found by the decoder): after every other.
    func send(_ frame: ServerFrame) {
        fill(order.reserve(), with: frame)
    }

    /// The task submitted the effect of one forwarded command.
    func performed() {
        inTask -= 1
    }

    /// One group commit's results for this connection's PUBs.
    func committed(_ results: [AppendResult]) {
        for result in results {
            let frame: ServerFrame = switch result.sequence {
            case .success(let sequence): .published(sequence: sequence)
            case .failure(let error): .error(ReplayError(error))
            }
            order.fill(result.token, with: frame)
        }
        writeReady()
    }

    /// Shutdown: answer what was read, read nothing more.
    func drain() {
        draining = true
    }

    /// Succeeds once every reply owed has been written (or can no longer be).
    func flushed(_ promise: EventLoopPromise<Void>) {
        if order.owed == 0 || context == nil { return promise.succeed() }
        whenFlushed.append(promise)
    }

    /// "N replies owed (oldest filled or not)", for the state dump.
    var stateDescription: String {
        "\(order.owed) replies owed (oldest \(order.owed == 0 ? "none" : order.isBlockedAtHead ? "unfilled" : "ready")), \(inTask) commands in the task"
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
        guard readHeld, admitted, !draining, order.owed <= maxOwed, let context else { return }
        readHeld = false
        context.read()
    }

    private func succeedFlushed() {
        let promises = whenFlushed
        whenFlushed = []
        for promise in promises { promise.succeed() }
    }
}

/// The writer's way back to one connection: results of its PUBs, once per group commit,
/// in one hop to its event loop.
final class PublishSink: AppendSink {
    private let eventLoop: any EventLoop
    private let router: NIOLoopBound<CommandRouter>

    init(eventLoop: any EventLoop, router: NIOLoopBound<CommandRouter>) {
        self.eventLoop = eventLoop
        self.router = router
    }

    func appended(_ results: [AppendResult]) {
        eventLoop.execute { [router] in router.value.committed(results) }
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
    let eventLoop: any EventLoop
    let router: NIOLoopBound<CommandRouter>
    /// For the PUBs that reach the task (see `CommandRouter`): results come back the same way.
    let sink: PublishSink

    /// Made on the event loop, once the router is in the pipeline.
    init(_ router: CommandRouter, on eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.router = NIOLoopBound(router, eventLoop: eventLoop)
        self.sink = router.sink
    }

    func admit(hello: ServerFrame) {
        eventLoop.execute { [router] in router.value.admit(hello: hello) }
    }

    func fill(_ slot: ReplyOrder.Slot, with frame: ServerFrame, afterWrite: (@Sendable () -> Void)? = nil) {
        eventLoop.execute { [router] in router.value.fill(slot, with: frame, afterWrite: afterWrite) }
    }

    func send(_ frame: ServerFrame) {
        eventLoop.execute { [router] in router.value.send(frame) }
    }

    func performed() {
        eventLoop.execute { [router] in router.value.performed() }
    }

    func drain() {
        eventLoop.execute { [router] in router.value.drain() }
    }

    /// Returns once every reply owed has been written.
    func flushed() async {
        let promise = eventLoop.makePromise(of: Void.self)
        eventLoop.execute { [router] in router.value.flushed(promise) }
        try? await promise.futureResult.get()
    }

    /// For the state dump (from its own queue; waits for the event loop).
    var stateDescription: String {
        (try? eventLoop.submit { [router] in router.value.stateDescription }.wait()) ?? "replies unknown (event loop gone)"
    }
}
