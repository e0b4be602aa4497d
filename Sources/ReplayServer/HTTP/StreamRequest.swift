import Foundation
import HTTPTypes
import Hummingbird
import ReplayAuth
import ReplayModel

/// A stream's name in a request's path, by the one rule every route that names a stream
/// reads it with (the Durable Streams routes, the inline POST, the live view's tail, the
/// derived streams, a subscription's streams, a fork's source): the path after the route's
/// prefix as sent, percent-decoded, checked by the stream-name rule.
enum StreamPath {
    /// The name in `raw`, or the 400 that says why it is not one.
    ///
    /// Foundation's decoding goes through `NSString` (5 % of the daemon's CPU under a load
    /// of POSTs), so it runs only for a path that holds a `%`.
    static func name(_ raw: some StringProtocol) throws(HTTPProblem) -> String {
        let name: String
        if raw.utf8.contains(UInt8(ascii: "%")) {
            guard let decoded = raw.removingPercentEncoding else {
                throw HTTPProblem.invalidName("the stream's name is not valid percent-encoded UTF-8: \(raw.prefix(200))")
            }
            name = decoded
        } else {
            name = String(raw)
        }
        if let problem = StreamName.problem(with: name) {
            throw HTTPProblem.invalidName("'\(name.prefix(200))' is not a valid stream name (\(problem)): \(StreamName.rule)")
        }
        return name
    }

    /// The name a route's catch-all (`**`) took: the rest of the path as sent (its
    /// components would drop an empty segment).
    @inline(never)  // else its messages take every route's async frame
    static func name(in context: some RequestContext) throws(HTTPProblem) -> String {
        guard let raw = context.parameters.get(String(Parameters.recursiveCaptureKey)) else {
            throw HTTPProblem(.notFound, .notFound, "no stream's path")
        }
        return try name(raw)
    }
}

/// One request to a stream of the Durable Streams routes (`/v1/stream/<name>`), read
/// once: the stream, what the request does to it in the authorizer's terms, and the
/// headers the protocol reads. The door's authorizer (`RequestAccess`), the router's
/// routes (`StreamEndpoint`) and the inline POST (`InlineAppends`) all take this value, so
/// that what a token is checked for is what the route then does.
///
/// The principal is the task's (`Principal.current`, which the door sets once it has
/// verified the token), not a stored copy: a route's value lives in its async frame, and
/// an SSE reader's task keeps that frame for as long as it reads.
struct StreamRequest {
    let name: String
    let operation: StreamOperation
    let headers: RequestHeaders

    /// The request whose path after `StreamEndpoint.prefix` is `raw`.
    init(method: HTTPRequest.Method, raw: some StringProtocol, fields: HTTPFields) throws(HTTPProblem) {
        self.init(method: method, name: try StreamPath.name(raw), fields: fields)
    }

    /// The request a route's catch-all names.
    init(_ request: Request, context: some RequestContext) throws(HTTPProblem) {
        self.init(method: request.method, name: try StreamPath.name(in: context), fields: request.headers)
    }

    private init(method: HTTPRequest.Method, name: String, fields: HTTPFields) {
        self.name = name
        headers = RequestHeaders(fields: fields)
        operation = Self.operation(method, headers)
    }

    /// Where the subscription routes begin, under the streams' prefix (made once: every
    /// POST's path is compared with it).
    private static let subscriptionsPrefix = SubscriptionRoutes.root + "/"

    /// The request at `path`, if it is one of a stream (`nil` for a subscription's route,
    /// which shares the prefix).
    static func at(_ path: String, method: HTTPRequest.Method, fields: HTTPFields) throws(HTTPProblem) -> StreamRequest? {
        // An ASCII path (a POST's always is: its target is read as visible ASCII) compares
        // and is cut as its bytes, as it would be as its characters: the characters' way
        // was half a microsecond of every POST.
        let bytes = path.utf8
        let raw: Substring
        if bytes.allSatisfy({ $0 < 0x80 }) {
            guard bytes.starts(with: StreamEndpoint.prefix.utf8), !bytes.starts(with: Self.subscriptionsPrefix.utf8) else { return nil }
            raw = Substring(bytes.dropFirst(StreamEndpoint.prefix.utf8.count))
        } else {
            guard path.hasPrefix(StreamEndpoint.prefix), !path.hasPrefix(Self.subscriptionsPrefix) else { return nil }
            raw = path.dropFirst(StreamEndpoint.prefix.count)
        }
        return try StreamRequest(method: method, raw: raw, fields: fields)
    }

    /// Reading is `read`; appending is `write`; closing, creating and deleting are
    /// administration of the stream.
    private static func operation(_ method: HTTPRequest.Method, _ headers: RequestHeaders) -> StreamOperation {
        switch method {
        case .get, .head: .read
        case .post: headers.closes ? .admin : .write
        default: .admin
        }
    }

    /// Who asks: the principal the door verified, or `unrestricted` without token rules.
    var principal: Principal { Principal.current }
}
