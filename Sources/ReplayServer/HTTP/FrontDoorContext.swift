import Hummingbird
import NIOCore

/// The HTTP door's request context: hummingbird's basic one, plus the peer's address,
/// which the rate limits key clients by when no token names them.
struct FrontDoorContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
