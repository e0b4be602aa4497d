import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// A plain HTTP/1.1 connection of the door: hummingbird's `HTTP1Channel`, whose pipeline
/// it builds the same way, but whose async channel (and with it the connection's task
/// loop) is made only when `FirstRequestGate` hands the connection on. A connection whose
/// first request is an SSE read served with no task (`ParkedEventStream`) never gets one,
/// and its task ends. (Over TLS, HTTP/1.1 and HTTP/2 stay hummingbird's
/// `HTTP2UpgradeChannel`, whose pipeline is set by ALPN.)
struct HTTP1Door: HTTPChannelHandler {
    /// The connection, and hummingbird's async channel once it is decided that hummingbird
    /// serves it (`nil`: it will not).
    struct Connection: ServerChildChannelValue {
        let channel: any Channel
        let served: EventLoopFuture<FirstRequestGate.Served?>
    }

    typealias Value = Connection

    let responder: HTTPChannelHandler.Responder
    /// The handlers after the HTTP codec, as `HTTP1Channel.Configuration` has them.
    let additionalChannelHandlers: @Sendable () -> [any RemovableChannelHandler]
    /// The SSE reads served with no task; `nil`: none are.
    let eventStreams: ParkedEventStreams?
    /// The POSTs read and answered before NIO's HTTP codec (`FramedAppendHandler`); `nil`:
    /// none are.
    let framedAppends: InlineAppends?

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection> {
        channel.eventLoop.makeCompletedFuture {
            // hummingbird's decoder limits and pipeline, as `HTTP1Channel.setup` makes them.
            let limits = HTTP1Channel.Configuration.DecoderConfiguration()
            var decoderLimits = NIOHTTPDecoderLimitConfiguration()
            decoderLimits.maxHeaderFieldSize = limits.maxHeaderFieldSize
            decoderLimits.maxHeaderListSize = limits.maxHeaderListSize
            decoderLimits.maxHeaderFieldCount = limits.maxHeaderFieldCount
            let operations = channel.pipeline.syncOperations
            if let framedAppends { try operations.addHandler(FramedAppendHandler(framedAppends)) }
            try operations.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: decoderLimits)
            try operations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try operations.addHandlers(additionalChannelHandlers())
            let decided = channel.eventLoop.makePromise(of: FirstRequestGate.Served?.self)
            try operations.addHandler(FirstRequestGate(eventStreams: eventStreams, decided: decided, logger: logger))
            return Connection(channel: channel, served: decided.futureResult)
        }
    }

    func handle(value: Connection, logger: Logger) async {
        guard let served = try? await value.served.get() else { return }
        await handleHTTP(asyncChannel: served, logger: logger)
    }
}
