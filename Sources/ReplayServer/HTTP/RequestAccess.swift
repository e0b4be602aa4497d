import HTTPTypes
import Hummingbird
import ReplayAuth

/// What an HTTP request asks to do, in the authorizer's terms: an operation on a stream,
/// on every stream (daemon-wide objects), or nothing that needs a token.
///
/// Each family of routes declares the access of its requests beside its routes
/// (`StreamEndpoint.access`, `TailEndpoint.access`, `DerivationRoutes.access`,
/// `SubscriptionRoutes.access`, `HTTPFrontDoor.access`), and the door asks them in the
/// router's order. Not a middleware on each route group, which is where hummingbird would
/// carry it: each middleware adds async frames to every request of its group, and an SSE
/// reader's task keeps its deepest frames while it reads (`FrontDoorResponder` measured
/// 13.6 KB of frames as middlewares against 8.3 KB as one responder). So the door checks a
/// token once, before routing, against what the route owners declared.
enum RequestAccess: Equatable {
    /// The page itself (its data calls are checked), and the signing keys.
    case open
    /// A wake's worker or webhook receiver, which proves itself with its wake's token.
    case wakeToken
    /// The stream list: any valid token; it shows only the streams the token may read.
    /// Also a request whose route checks the stream itself, and one that names no stream
    /// (its route refuses it).
    case anyToken
    case stream(StreamOperation, String)
    /// Daemon-wide: the metrics and the subscriptions need the operation on `**`.
    case everywhere(StreamOperation)

    static func of(_ request: Request) -> RequestAccess {
        let (method, path) = (request.method, request.uri.path)
        return HTTPFrontDoor.access(path) ?? TailEndpoint.access(path) ?? DerivationRoutes.access(method, path)
            ?? SubscriptionRoutes.access(path) ?? StreamEndpoint.access(method, path, fields: request.headers)
            // A path no route declares: only a token for everything learns that it is not found.
            ?? .everywhere(.admin)
    }
}
