import Hummingbird
import ReplayAuth

/// What an HTTP request asks to do, in the authorizer's terms: an operation on a stream,
/// on every stream (daemon-wide objects), or nothing that needs a token.
enum RequestAccess: Equatable {
    /// The page itself (its data calls are checked), and the signing keys.
    case open
    /// A wake's worker or webhook receiver, which proves itself with its wake's token.
    case wakeToken
    /// The stream list: any valid token; it shows only the streams the token may read.
    case anyToken
    case stream(StreamOperation, String)
    /// Daemon-wide: the metrics and the subscriptions need the operation on `**`.
    case everywhere(StreamOperation)

    static func of(_ request: Request) -> RequestAccess {
        let path = request.uri.path
        let root = StreamEndpoint.prefix
        switch path {
        case "/": return .open
        case "/metrics": return .everywhere(.admin)
        case "/v1/streams": return .anyToken
        default: break
        }
        // The live view's tail checks `read` on its stream itself (`TailEndpoint`).
        if path.hasPrefix(TailEndpoint.prefix) { return .anyToken }
        // Derived streams: reading them is checked by their routes, per stream; defining
        // one is administration of it (its inputs' reads are checked by the route).
        if path == DerivationRoutes.root || path.hasPrefix(DerivationRoutes.root + "/") {
            guard request.method == .put else { return .anyToken }
            return .stream(.admin, String(path.dropFirst(DerivationRoutes.root.count + 1)).removingPercentEncoding ?? "")
        }
        if path.hasPrefix(SubscriptionRoutes.root + "/") {
            if path == SubscriptionRoutes.root + "/jwks.json" { return .open }
            if SubscriptionRoutes.carriesWakeToken(path) { return .wakeToken }
            if path.hasSuffix("/claim") { return .everywhere(.claim) }
            return .everywhere(.admin)
        }
        guard path.hasPrefix(root) else { return .everywhere(.admin) }
        let name = String(path.dropFirst(root.count)).removingPercentEncoding ?? ""
        switch request.method {
        case .get, .head: return .stream(.read, name)
        // Closing a stream is administration; appending to it, writing.
        case .post: return RequestHeaders(fields: request.headers).closes ? .stream(.admin, name) : .stream(.write, name)
        default: return .stream(.admin, name)
        }
    }
}
