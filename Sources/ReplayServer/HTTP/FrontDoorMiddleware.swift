import HTTPTypes
import Hummingbird
import Logging
import ReplayAuth

/// What every HTTP response gets: the bearer-token check (`--http-token`), the browser
/// security headers of the Durable Streams PROTOCOL.md §12.7, also on errors, and CORS.
///
/// CORS by hand, not hummingbird's `CORSMiddleware`: that one takes one policy (any
/// origin, the request's own, or one fixed origin), where `--http-cors-origin` is a list;
/// and it sends `Access-Control-Expose-Headers` only on a preflight, while a browser reads
/// it from the response itself: without it a page cannot see `Stream-Next-Offset`. By
/// default no other origin is allowed (a page served by another site cannot call this
/// door from a visitor's browser); `*` allows any, as a public read-only door may want.
///
/// Then the client's rates (`ClientRateLimiter`): per token where tokens name clients, else
/// per remote address; over them, 429 with `Retry-After`, before the request does anything.
struct FrontDoorMiddleware<Context: RemoteAddressRequestContext>: RouterMiddleware {
    let settings: HTTPSettings
    let logger: Logger
    let limiter: ClientRateLimiter

    /// The protocol's headers a browser script may read across origins.
    static var exposed: [String] {
        [
            "Stream-Next-Offset", "Stream-Up-To-Date", "Stream-Closed", "Stream-Cursor", "Stream-TTL", "Stream-Expires-At",
            "Stream-SSE-Data-Encoding", "Producer-Epoch", "Producer-Seq", "Producer-Expected-Seq", "Producer-Received-Seq",
            "Replay-Stream-Failed", "Replay-Max-Events", "Replay-Stream-Count", "ETag", "Location",
        ]
    }

    /// The headers a page may send: the protocol's, and the token.
    static var allowed: [HTTPField.Name] {
        [
            .accept, .authorization, .contentType, .ifNoneMatch, .streamClosed, .streamSeq, .streamTTL, .streamExpiresAt,
            .producerID, .producerEpoch, .producerSeq, .streamForkedFrom, .streamForkOffset, .streamForkSubOffset, .replayMaxEvents,
        ]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let allowedOrigin = request.headers[.origin].flatMap(settings.corsValue(for:))
        var response: Response
        do {
            // A preflight comes before the token check: a browser never sends one with it.
            if request.method == .options, let origin = request.headers[.origin], request.headers[.accessControlRequestMethod] != nil {
                response = try preflight(from: origin, allowed: allowedOrigin)
            } else {
                let principal = try await authorize(request)
                let request = try limit(request, context: context, principal: principal)
                if let principal {
                    response = try await Principal.$current.withValue(principal) { try await next(request, context) }
                } else {
                    response = try await next(request, context)
                }
            }
        } catch let error as HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        addHeaders(to: &response, allowedOrigin: allowedOrigin)
        return response
    }

    /// The security and CORS headers. (A plain function: what an async function holds
    /// lives in its task's frame, allocated per request.)
    private func addHeaders(to response: inout Response, allowedOrigin: String?) {
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.crossOriginResourcePolicy] = "cross-origin"
        if let allowedOrigin {
            response.headers[.accessControlAllowOrigin] = allowedOrigin
            response.headers[.accessControlExposeHeaders] = Self.exposed.joined(separator: ", ")
        } else if settings.allowedOrigins.contains("*") {
            // Any origin: the same headers whether or not the request says where it is from.
            response.headers[.accessControlAllowOrigin] = "*"
            response.headers[.accessControlExposeHeaders] = Self.exposed.joined(separator: ", ")
        }
        if allowedOrigin != nil, allowedOrigin != "*" { response.headers[.vary] = "Origin" }
    }

    /// The answer to a preflight: the protocol's methods and headers, cached for a day, for
    /// an allowed origin; 403 for another.
    private func preflight(from origin: String, allowed: String?) throws -> Response {
        guard allowed != nil else {
            throw HTTPError(
                .forbidden, message: "pages from '\(origin)' may not call this server (replayd --http-cors-origin lists the origins that may)")
        }
        var fields = HTTPFields()
        fields[.accessControlAllowMethods] = "GET, HEAD, PUT, POST, DELETE, OPTIONS"
        fields[.accessControlAllowHeaders] = Self.allowed.map(\.rawName).joined(separator: ", ")
        fields[.accessControlMaxAge] = "86400"
        return Response(status: .noContent, headers: fields)
    }

    /// The request, if its client is within its rates (its body then charged as it is
    /// read, where its length was not announced); else the 429 to answer.
    private func limit(_ request: Request, context: Context, principal: Principal?) throws -> Request {
        let limits = (principal?.limits ?? .none).over(settings.clientLimits)
        guard limits.limitsRates else { return request }
        let client: String
        if let principal, principal != .unrestricted {
            client = "token '\(principal.name)'"
        } else {
            client = "address \(context.remoteAddress?.ipAddress ?? "unknown")"
        }
        let announced = request.headers[.contentLength].flatMap { Int($0) }
        if let wait = limiter.admit(client, limits: limits, bytes: announced ?? 0) {
            let seconds = wait.retryAfterSeconds
            throw HTTPError(
                .tooManyRequests, headers: [.retryAfter: String(seconds)],
                message: "\(client) is over its rate (\(ClientRateLimiter.describe(limits))); retry in \(seconds) s")
        }
        guard limits.bytes != nil, announced == nil, [.post, .put].contains(request.method) else { return request }
        var metered = request
        let limiter = self.limiter
        metered.body = RequestBody(asyncSequence: MeteredBody(base: request.body) { limiter.charge(client, bytes: $0) })
        return metered
    }

    /// The principal the request is served as (`nil`: no token rules apply), or a refusal:
    /// 401 for a missing or unverifiable token, 403 for a valid one outside its scopes.
    private func authorize(_ request: Request) async throws -> Principal? {
        guard let keys = settings.tokenKeys else {
            try authorizeSharedToken(request)
            return nil
        }
        let access = RequestAccess.of(request)
        if access == .open || access == .wakeToken { return nil }
        guard let token = request.headers[.authorization].flatMap(BearerToken.from(header:)) else {
            throw refuse(.unauthorized, "this needs Authorization: Bearer <token>", who: "-", access)
        }
        // The daemon's own --http-token stays the simplest case: everything.
        if let shared = settings.token, token == shared { return .unrestricted }
        let principal: Principal
        do {
            principal = try await keys.verify(token)
        } catch {
            let reason = if case .invalid(let why) = error { why } else { "no token" }
            throw refuse(.unauthorized, "the token is not accepted: \(reason)", who: "-", access)
        }
        let allowed =
            switch access {
            case .open, .wakeToken, .anyToken: true
            case .stream(let operation, let stream): principal.may(operation, on: stream)
            case .everywhere(let operation): principal.mayEverywhere(operation)
            }
        guard allowed else { throw refuse(.forbidden, "the token does not allow this", who: principal.name, access) }
        return principal
    }

    /// Counted and logged (who, what, which stream; never the token), then thrown.
    private func refuse(_ status: HTTPResponse.Status, _ message: String, who: String, _ access: RequestAccess) -> HTTPError {
        DaemonMetrics.deniedRequests.increment()
        let what =
            switch access {
            case .stream(let operation, let stream): "\(operation.rawValue) on '\(stream)'"
            case .everywhere(let operation): "\(operation.rawValue) on every stream"
            case .open, .wakeToken, .anyToken: "the stream list"
            }
        logger.notice("http: denied \(status.code): \(who) asked for \(what): \(message)")
        var headers = HTTPFields()
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer realm=\"replay\"" }
        let shown =
            switch access {
            case .stream(let operation, _): "\(message): \(operation.rawValue) on this stream"
            default: message
            }
        return HTTPError(status, headers: headers, message: shown)
    }

    private func authorizeSharedToken(_ request: Request) throws {
        guard let token = settings.token else { return }
        // A wake's worker or webhook receiver proves itself with the token of its wake,
        // checked by the subscription (`SubscriptionRoutes`), not with the daemon's.
        if SubscriptionRoutes.carriesWakeToken(request.uri.path) { return }
        let writes = [.put, .post, .delete].contains(request.method)
        guard writes || settings.tokenForReads else { return }
        guard request.headers[.authorization] == "Bearer \(token)" else {
            throw HTTPError(
                .unauthorized, headers: [.wwwAuthenticate: "Bearer realm=\"replay\""], message: "this needs Authorization: Bearer <token> (--http-token)")
        }
    }
}
