import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client hung up while its event stream (SSE) was being
/// served, so that its reader ends at once and not at its next keep-alive write.
///
/// Hummingbird allows half-closure (a client may end its input and still read its
/// answer), so a client's FIN arrives as `ChannelEvent.inputClosed`, not as the
/// connection's close that ends a parked reader's wait (`WaitInterrupt`). An SSE client
/// that ends its input has left: `EventSource`, curl and every client that reads an event
/// stream close both directions at once. Other answers are left alone, so a client that
/// half-closes after its request (`nc -N`) still gets it, as nginx serves it too.
///
/// Its cost, with the lease an SSE reader now holds: 24,349 bytes of RSS per reader
/// against 23,981 before, 10,000 readers (`replay-bench --against
/// replay-http,replay-http@baseline --scenarios sse-readers --scale 1 --rounds 2`).
final class EventStreamHangUp: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var streaming = false
    private var inputClosed = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            // An event stream is a 200; an append's 204 skips the look at its fields.
            streaming = head.status == .ok && head.headerFields[.contentType] == "text/event-stream"
            context.write(data, promise: promise)
            if streaming, inputClosed { context.close(promise: nil) }
        case .end:
            streaming = false
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            inputClosed = true
            if streaming { return context.close(promise: nil) }
        }
        context.fireUserInboundEventTriggered(event)
    }
}
