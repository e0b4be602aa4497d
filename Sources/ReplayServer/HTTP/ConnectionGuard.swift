import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import NIOSSL
import NIOTLS
import Synchronization

/// What keeps slow or numerous HTTP clients from taking the daemon down (a "slowloris":
/// many connections, each sending half a request head and holding it). Without it, one
/// local client opening 20,100 connections used up the daemon's 20,000 descriptors: HTTP
/// requests timed out and the socket door stopped accepting too. Two limits:
///
/// - **a cap on connections** (`HTTPConnectionBudget`), below the descriptor limit, so that
///   the socket door, the store and the sources keep descriptors when the HTTP door is
///   full: a connection beyond it is closed at once and counted;
/// - **a deadline for each request head** (`RequestHeadDeadline`): a connection whose next
///   request head has not fully arrived within `--http-header-timeout` of its start (or of
///   its last response) is closed and counted, as nginx's `client_header_timeout` does.
///   Hummingbird's own idle timeout would not catch a client that trickles bytes. With
///   TLS the handshake comes first, under the same deadline (`TLSHandshakeDeadline`): the
///   request-head deadline starts only once it is done.
final class HTTPConnectionBudget: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)
    private let shed = Atomic<Int>(0)
    let logger: Logger

    init(limit: Int, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    /// Whether a new connection may stay; if so, `release` must follow when it closes.
    func admit() -> Bool {
        let now = open.add(1, ordering: .relaxed).newValue
        guard now <= limit else {
            open.subtract(1, ordering: .relaxed)
            let count = shed.add(1, ordering: .relaxed).newValue
            DaemonMetrics.httpConnectionsShed.increment()
            // The first, then one line per thousand: an attack must not flood the log.
            if count == 1 || count % 1000 == 0 {
                logger.warning("http: \(limit) connections open (--http-max-connections); \(count) refused so far")
            }
            return false
        }
        DaemonMetrics.httpConnections.set(now)
        return true
    }

    func release() {
        DaemonMetrics.httpConnections.set(open.subtract(1, ordering: .relaxed).newValue)
    }

    /// The cap for a descriptor limit: what is left after a reserve (the store, the
    /// sources, the listeners) and after the socket door's own cap, of which that door is
    /// counted at most half. So the two doors together never take the reserve, and a daemon
    /// whose socket door is given fewer connections (`--max-connections`) can hold more
    /// HTTP readers: under a limit of 20,000, 9,936 each by default, and 10,000 HTTP
    /// connections with `--max-connections 9000`.
    static func limit(configured: Int, descriptors: UInt64, socketConnections: Int) -> Int {
        let reserve: UInt64 = 128
        guard descriptors > reserve else { return 16 }
        let available = Int(min(descriptors - reserve, UInt64(Int.max)))
        let socket = min(max(socketConnections, 0), available / 2)
        return max(16, min(configured, available - socket))
    }
}

/// Wraps hummingbird's child channel: each connection asks the budget first.
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let budget: HTTPConnectionBudget
    /// With TLS: how long the handshake may take.
    var handshakeTimeout: TimeAmount?

    struct Refused: Error {}

    static var receiveBuffers: AdaptiveRecvByteBufferAllocator {
        AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65_536)
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        guard budget.admit() else {
            channel.close(promise: nil)
            return channel.eventLoop.makeFailedFuture(Refused())
        }
        let budget = self.budget
        channel.closeFuture.whenComplete { _ in budget.release() }
        // A request head and a small body fit in 512 bytes, and NIO grows the buffer when a
        // read fills it. Its default of 2,048 bytes stays allocated for every connection
        // that has read once: a parked SSE reader or a kept-alive connection held 1.5 KB
        // more (`tools/connection_memory.py`).
        try? channel.syncOptions?.setOption(.recvAllocator, value: Self.receiveBuffers)
        let value = inner.setup(channel: channel, logger: logger)
        guard let handshakeTimeout else { return value }
        return value.flatMapThrowing { value in
            // Right after the TLS handler: the protocol negotiation behind it takes the
            // handshake's event and does not pass it on.
            let operations = channel.pipeline.syncOperations
            let tls = try operations.handler(type: NIOSSLServerHandler.self)
            try operations.addHandler(TLSHandshakeDeadline(timeout: handshakeTimeout), position: .after(tls))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// Closes a connection whose next request head does not arrive in time (see above). Armed
/// while every request received has been answered; a head received disarms it.
///
/// Arming is a timestamp, not a timer: one scheduled check per connection at a time, which
/// finds the deadline still ahead (a request came and was answered meanwhile) and goes back
/// to sleep until it. Scheduling and cancelling a task for every request, as this handler
/// first did, cost every keep-alive request an allocation of the task, its promise and its
/// closure, and two trips through the event loop's locked queue of timers; the lazy check
/// is how Netty's `IdleStateHandler` keeps its timer off the per-message path too.
final class RequestHeadDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let timeout: TimeAmount
    private var received = 0
    private var answered = 0
    /// When the connection last fell idle (every request answered); nil while it is not.
    private var idleSince: NIODeadline?
    /// The one pending check, if any.
    private var check: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    /// This handler's place in the pipeline, while it is in it: what a framed request's
    /// calls arm the check with.
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        arm(context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        check?.cancel()
        check = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { began() }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { ended(context) }
        context.write(data, promise: promise)
    }

    /// A request taken before NIO's decoder (`FramedAppendHandler`) has its head. Called,
    /// not sent as a user event: two events a POST through the pipeline, each cast by every
    /// handler on its way, were 2 % of the daemon's CPU under a load of POSTs.
    func framedRequestBegan() {
        began()
    }

    /// A request taken before NIO's decoder has its answer written.
    func framedRequestAnswered() {
        if let context { ended(context) }
    }

    private func began() {
        received += 1
        idleSince = nil
        // A connection's first request is often its only one (an SSE reader's, for hours):
        // its check is not left scheduled, holding its task, for the timeout.
        if received == 1 {
            check?.cancel()
            check = nil
        }
    }

    private func ended(_ context: ChannelHandlerContext) {
        answered += 1
        if answered >= received { arm(context) }
    }

    private func arm(_ context: ChannelHandlerContext) {
        let now = context.eventLoop.now
        idleSince = now
        if check == nil { schedule(at: now + timeout, context) }
    }

    private func schedule(at deadline: NIODeadline, _ context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        check = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.checkDeadline(context)
        }
    }

    private func checkDeadline(_ context: ChannelHandlerContext) {
        check = nil
        // Busy: the next arming schedules the next check.
        guard let idleSince else { return }
        let deadline = idleSince + timeout
        guard deadline <= context.eventLoop.now else { return schedule(at: deadline, context) }
        DaemonMetrics.httpHeaderTimeouts.increment()
        context.close(promise: nil)
    }
}

/// Closes a TLS connection whose handshake has not completed in time (a client that
/// connects and sends nothing, or half a ClientHello), then leaves the pipeline.
final class TLSHandshakeDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: timeout) {
            DaemonMetrics.tlsHandshakeTimeouts.increment()
            channel.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            deadline?.cancel()
            deadline = nil
            context.fireUserInboundEventTriggered(event)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
