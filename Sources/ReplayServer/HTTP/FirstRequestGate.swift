import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// The last handler of a plain HTTP/1.1 connection until its first request that the inline
/// POSTs do not take (`InlineAppendHandler`) arrives, which decides who serves the
/// connection: an SSE read this door serves with no task becomes a `ParkedEventStream`;
/// anything else hands the connection to hummingbird, whose async channel is made here,
/// for the connection's task to run (`HTTP1Door.handle`), and this handler leaves.
///
/// Why not hummingbird's connection from the start: its task runs until the connection
/// closes (its async channel is closed, and waited for, when the task's body returns), so
/// a reader served there keeps it, with the channel's async bridge, for as long as it
/// reads. Here a connection's task waits for the decision in one small frame, and ends
/// when the connection becomes a parked reader, or closes undecided.
final class FirstRequestGate: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias Served = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    private let eventStreams: ParkedEventStreams?
    private let logger: Logger
    /// Hummingbird's async channel, or `nil` when hummingbird will not serve the connection.
    private var decided: EventLoopPromise<Served?>?
    private var isDecided = false
    /// The connection's reader, once its first request made it one.
    private var reader: ParkedEventStream?

    init(eventStreams: ParkedEventStreams?, decided: EventLoopPromise<Served?>, logger: Logger) {
        self.eventStreams = eventStreams
        self.decided = decided
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A reader's connection takes no more requests: what its client sends is dropped.
        guard !isDecided else { return }
        if case .head(let head) = unwrapInboundIn(data), let eventStreams, let reader = eventStreams.open(head, context: context) {
            isDecided = true
            self.reader = reader
            decided?.succeed(nil)
            decided = nil
            // Once this read is done: not inside the decoder that is reading it.
            let (gate, channel) = (NIOLoopBound(self, eventLoop: context.eventLoop), context.channel)
            context.eventLoop.execute { gate.value.becomeEventStream(channel, reader) }
            return
        }
        handOn(context: context)
        context.fireChannelRead(data)
        leave(context)
    }

    /// A request hummingbird cannot parse: hummingbird answers it (400) and closes.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !isDecided else { return context.fireErrorCaught(error) }
        handOn(context: context)
        context.fireErrorCaught(error)
        leave(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        reader?.connectionClosed()
        undecided()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        undecided()
    }

    /// Undecided, the connection is idle: a graceful shutdown's quiesce or the client's
    /// end of input closes it, as hummingbird closes an idle connection. A reader ends at
    /// the shutdown through `ParkedReads`, and at its client's hang-up through
    /// `EventStreamHangUp`.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard !isDecided else { return context.fireUserInboundEventTriggered(event) }
        switch event {
        case is ChannelShouldQuiesceEvent: context.close(promise: nil)
        case ChannelEvent.inputClosed: context.close(promise: nil)
        default: context.fireUserInboundEventTriggered(event)
        }
    }

    /// Hands the connection to hummingbird: its connection state handler and async channel
    /// after this handler, which leaves the pipeline once what is being read has passed on.
    private func handOn(context: ChannelHandlerContext) {
        isDecided = true
        do {
            let operations = context.pipeline.syncOperations
            try operations.addHandler(HTTPConnectionStateHandler(logger: logger))
            let served = try Served(wrappingChannelSynchronously: context.channel, configuration: .init(isOutboundHalfClosureEnabled: true))
            decided?.succeed(served)
        } catch {
            logger.error("http: a connection could not be handed to the router: \(error)")
            decided?.succeed(nil)
            context.close(promise: nil)
        }
    }

    private func leave(_ context: ChannelHandlerContext) {
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// The connection's task ends, if it still waits: no request will be handed to it.
    private func undecided() {
        guard !isDecided else { return }
        isDecided = true
        decided?.succeed(nil)
        decided = nil
    }

    /// A reader's connection reads no more requests and writes its answer's chunks as they
    /// are (`HTTPChunk`), so its HTTP handlers go, and then the reader starts: the decoder
    /// (what the client still sends is dropped in its place, `DiscardedInput`, which also
    /// closes the connection when the client ends its input), the head's deadline, the
    /// inline POSTs, the conversion to `HTTPTypes`, the encoder and `EventStreamHangUp`.
    /// The request's handlers were 2.7 KB of a reader's memory, the decoder 1.6 KB of it
    /// with the header fields it keeps room for; the encoder wrote each chunk as three
    /// buffers. A connection whose handlers could not all go is closed: the reader's
    /// buffers must not reach them.
    private func becomeEventStream(_ channel: any Channel, _ reader: ParkedEventStream) {
        guard channel.isActive else { return }
        let operations = channel.pipeline.syncOperations
        do {
            let decoder = try operations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            // First the handler that drops what the decoder leaves over as it goes.
            try operations.addHandler(DiscardedInput(), position: .after(decoder))
            operations.removeHandler(decoder, promise: nil)
            operations.removeHandler(try operations.handler(type: HTTPResponseEncoder.self), promise: nil)
            operations.removeHandler(try operations.handler(type: HTTP1ToHTTPServerCodec.self), promise: nil)
            operations.removeHandler(try operations.handler(type: EventStreamHangUp.self), promise: nil)
            if let deadline = try? operations.handler(type: RequestHeadDeadline.self) { operations.removeHandler(deadline, promise: nil) }
            if let appends = try? operations.handler(type: InlineAppendHandler.self) { operations.removeHandler(appends, promise: nil) }
        } catch {
            logger.error("http: a reader's connection could not drop its HTTP handlers, and closes: \(error)")
            return channel.close(promise: nil)
        }
        reader.start()
    }
}

/// Where a parked reader's HTTP decoder was: its connection reads no more requests, so the
/// bytes its client still sends are dropped here (NIO has no handler that drops reads).
/// The client's end of input is its hang-up: `EventSource`, curl and every client that
/// reads an event stream close both directions at once, and half-closure is allowed, so
/// it arrives as `inputClosed`, not as the close that ends the reader at once.
final class DiscardedInput: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { return context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }
}
