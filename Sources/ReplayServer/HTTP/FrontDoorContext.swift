import Hummingbird
import NIOCore

/// The HTTP door's request context: hummingbird's basic one, plus the peer's address,
/// which the rate limits key clients by when no token names them, and when the connection
/// closes, which ends an SSE reader's wait.
struct FrontDoorContext: RequestContext, RemoteAddressRequestContext, ConnectionClosingContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    let connectionClosed: EventLoopFuture<Void>

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        connectionClosed = source.channel.closeFuture
    }
}

/// A request context that knows when its connection closes.
protocol ConnectionClosingContext {
    var connectionClosed: EventLoopFuture<Void> { get }
}
