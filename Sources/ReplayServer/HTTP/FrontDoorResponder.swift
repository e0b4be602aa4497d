import HTTPTypes
import Hummingbird
import Logging
import NIOCore
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
///
/// It also counts and times the requests (`RequestMetrics`), and hands them to the router.
///
/// A responder around the router rather than a middleware in it, and async functions that
/// hold as little as they can: a parked SSE reader's connection task keeps the slabs of
/// the deepest request it has served for as long as it lives, and each middleware the
/// router chains adds a few async frames to every request (the middleware's, and the
/// responders' between them). With this door and hummingbird's `MetricsMiddleware` as two
/// middlewares, an SSE request's deepest point was 13.6 KB of frames; as this responder
/// (and with the route's frames trimmed too), 8.3 KB.
struct FrontDoorResponder: HTTPResponder {
    typealias Context = FrontDoorContext

    let router: RouterResponder<Context>
    let settings: HTTPSettings
    let logger: Logger
    let limiter: ClientRateLimiter
    /// Request counts and latencies by route, method and status, when the daemon serves
    /// `/metrics`.
    let metrics: RequestMetrics?

    /// The protocol's headers a browser script may read across origins.
    static var exposed: [String] {
        [
            "Stream-Next-Offset", "Stream-Up-To-Date", "Stream-Closed", "Stream-Cursor", "Stream-TTL", "Stream-Expires-At",
            "Stream-SSE-Data-Encoding", "Producer-Epoch", "Producer-Seq", "Producer-Expected-Seq", "Producer-Received-Seq",
            "Replay-Stream-Failed", "Replay-Max-Events", "Replay-Stream-Count", "Replay-Traceparent", "Replay-Key", "Replay-Seq", "Replay-Chain-Hash",
            "Replay-Scheduled-Id", "Replay-Due", "ETag",
            "Location",
        ]
    }

    /// The headers a page may send: the protocol's, and the token.
    static var allowed: [HTTPField.Name] {
        [
            .accept, .authorization, .contentType, .ifNoneMatch, .streamClosed, .streamSeq, .streamTTL, .streamExpiresAt,
            .producerID, .producerEpoch, .producerSeq, .streamForkedFrom, .streamForkOffset, .streamForkSubOffset, .replayMaxEvents,
            .traceparent, .replayKey, .replayDelay, .replayAt, .replayTTL, .replayEventTTL, .replayCompact, .replayTombstoneRetention,
        ]
    }

    @Sendable func respond(to request: Request, context: Context) async throws -> Response {
        guard Self.opensEventStream(request) else { return try await serve(request, context: context) }
        return try await Self.apart { try await serve(request, context: context) }
    }

    /// An SSE read, which holds its connection for as long as the reader stays. By its
    /// query's text, without parsing it: a request taken for one by mistake only costs a
    /// task.
    private static func opensEventStream(_ request: Request) -> Bool {
        request.method == .get && request.uri.query?.contains("live=sse") == true
    }

    /// Answers a request in a child task of its own. A connection's task keeps the slabs
    /// of the deepest call it made for as long as the connection lives: routing an SSE
    /// read there left its reader holding them while parked. In a child task they go when
    /// the answer is made, before its body runs in the connection's task; a parked reader
    /// held 1.5 KB less (`tools/connection_memory.py`). Only for SSE reads: the child is
    /// one more task and one more hop for a request that is answered at once.
    @inline(never)
    private static func apart(_ serve: @escaping @Sendable () async throws -> Response) async throws -> Response {
        try await withThrowingTaskGroup(of: Response.self) { group in
            group.addTask(operation: serve)
            return try await group.next()!
        }
    }

    /// What an async function holds lives in its task's frame, so this one holds only what
    /// crosses its waits; the decisions around them are plain functions, and the requests
    /// that need more (a preflight, a token verified, a body metered) take another
    /// function's frame.
    private func serve(_ request: Request, context: Context) async throws -> Response {
        let started = metrics?.start(request.method)
        var response: Response
        do {
            switch try admission(request, context: context) {
            case .routed: response = try await router.respond(to: request, context: context)
            case let other: response = try await respond(request, context: context, after: other)
            }
        } catch let error as HTTPResponseError {
            response = try Self.answer(error, to: request, context: context)
        } catch {
            if let metrics, let started { metrics.failed(started, route: context.endpointPath) }
            throw error
        }
        if let metrics, let started { metrics.answered(&response, started, route: context.endpointPath) }
        addHeaders(to: &response, for: request)
        return response
    }

    /// A refusal's answer. Out of line, as what follows: the problems' values would
    /// otherwise take room in `respond`'s frame, which an SSE reader's task keeps.
    @inline(never)
    private static func answer(_ error: any HTTPResponseError, to request: Request, context: Context) throws -> Response {
        switch error {
        case let problem as HTTPProblem: problem.response
        case let error as HTTPError: HTTPProblem(error).response
        default: try error.response(from: request, context: context)
        }
    }

    /// Hummingbird's router answers its own refusals (no route) itself, without a body:
    /// given their code here, so that no answer of the door lacks one.
    private static func giveCode(to response: inout Response) {
        var headers = response.headers
        headers[.contentLength] = nil
        response = HTTPProblem(status: response.status, message: nil, headers: headers).response
    }

    /// What a request needs before the router has it.
    private enum Admission {
        /// Nothing: straight to the router.
        case routed
        /// A CORS preflight, answered here.
        case preflight
        /// Its token verified against the token rules, then its client's rates.
        case verified
        /// Its body charged to this client as it is read.
        case metered(client: String)
    }

    /// A preflight comes before the token check: a browser never sends one with it. Then
    /// the daemon's own token, and the client's rates, or the refusal (thrown).
    @inline(never)
    private func admission(_ request: Request, context: Context) throws -> Admission {
        if isPreflight(request) { return .preflight }
        if settings.tokenKeys != nil { return .verified }
        try checkSharedToken(request)
        guard let client = try limit(request, context: context, principal: nil) else { return .routed }
        return .metered(client: client)
    }

    @inline(never)
    private func respond(_ request: Request, context: Context, after admission: Admission) async throws -> Response {
        switch admission {
        case .routed:
            return try await router.respond(to: request, context: context)
        case .preflight:
            return try preflight(request)
        case .metered(let client):
            return try await route(request, metering: client, as: nil, context: context)
        case .verified:
            let principal = try await authorize(request)
            let client = try limit(request, context: context, principal: principal)
            return try await route(request, metering: client, as: principal, context: context)
        }
    }

    /// The router's answer, the body metered where `client` is given and the principal in
    /// the task where there is one.
    private func route(_ request: Request, metering client: String?, as principal: Principal?, context: Context) async throws -> Response {
        var request = request
        if let client {
            let limiter = self.limiter
            request.body = RequestBody(asyncSequence: MeteredBody(base: request.body) { limiter.charge(client, bytes: $0) })
        }
        guard let principal else { return try await router.respond(to: request, context: context) }
        return try await Principal.$current.withValue(principal) { [request] in try await router.respond(to: request, context: context) }
    }

    /// The security and CORS headers, and a code for a refusal without one. (One call out
    /// of line for both: a check of the response in `respond` itself cost every SSE
    /// reader's task 1,000 bytes, `replay-bench --scenarios sse-readers`.)
    @inline(never)
    private func addHeaders(to response: inout Response, for request: Request) {
        if response.status.code >= 400, response.headers[.contentType] == nil { Self.giveCode(to: &response) }
        Self.addHeaders(to: &response.headers, origin: request.headers.value(.origin), settings: settings)
    }

    /// The security and CORS headers of every answer, for a request from `origin`; also
    /// what a POST answered on its event loop gets (`InlineAppendHandler`).
    static func addHeaders(to headers: inout some AnswerFields, origin: String?, settings: HTTPSettings) {
        let allowedOrigin = origin.flatMap(settings.corsValue(for:))
        headers.set(.xContentTypeOptions, "nosniff")
        headers.set(.crossOriginResourcePolicy, "cross-origin")
        if let allowedOrigin {
            headers.set(.accessControlAllowOrigin, allowedOrigin)
            headers.set(.accessControlExposeHeaders, exposedList)
        } else if settings.allowedOrigins.contains("*") {
            // Any origin: the same headers whether or not the request says where it is from.
            headers.set(.accessControlAllowOrigin, "*")
            headers.set(.accessControlExposeHeaders, exposedList)
        }
        if allowedOrigin != nil, allowedOrigin != "*" { headers.set(.vary, "Origin") }
    }

    private static let exposedList = exposed.joined(separator: ", ")

    private func isPreflight(_ request: Request) -> Bool {
        request.method == .options && request.headers.value(.origin) != nil && request.headers.value(.accessControlRequestMethod) != nil
    }

    /// The answer to a preflight: the protocol's methods and headers, cached for a day, for
    /// an allowed origin; 403 for another.
    @inline(never)
    private func preflight(_ request: Request) throws -> Response {
        let origin = request.headers.value(.origin) ?? ""
        guard settings.corsValue(for: origin) != nil else {
            throw HTTPProblem.forbidden(
                "pages from '\(origin)' may not call this server (replayd --http-cors-origin lists the origins that may)")
        }
        var fields = HTTPFields()
        fields[.accessControlAllowMethods] = "GET, HEAD, PUT, POST, DELETE, OPTIONS"
        fields[.accessControlAllowHeaders] = Self.allowed.map(\.rawName).joined(separator: ", ")
        fields[.accessControlMaxAge] = "86400"
        return Response(status: .noContent, headers: fields)
    }

    /// Nothing if the request's client is within its rates, or the client to charge for the
    /// body as it is read, where its length was not announced; else the 429 to answer.
    /// (Not the metered body itself: a `RequestBody`'s size is known only at run time, so
    /// each one an async function holds is one more allocation in its task.)
    @inline(never)
    private func limit(_ request: Request, context: Context, principal: Principal?) throws -> String? {
        let limits = (principal?.limits ?? .none).over(settings.clientLimits)
        guard limits.limitsRates else { return nil }
        let client: String
        if let principal, principal != .unrestricted {
            client = "token '\(principal.name)'"
        } else {
            client = Self.client(address: context.remoteAddress)
        }
        let announced = request.headers.value(.contentLength).flatMap { Int($0) }
        if let wait = limiter.admit(client, limits: limits, bytes: announced ?? 0) {
            let seconds = wait.retryAfterSeconds
            throw HTTPProblem(
                .tooManyRequests, HTTPProblem.Code(.rateLimited),
                "\(client) is over its rate (\(ClientRateLimiter.describe(limits))); retry in \(seconds) s", headers: [.retryAfter: String(seconds)])
        }
        guard limits.bytes != nil, announced == nil, [.post, .put].contains(request.method) else { return nil }
        return client
    }

    /// The client a request without a token of its own is charged to: its address.
    static func client(address: SocketAddress?) -> String {
        "address \(address?.ipAddress ?? "unknown")"
    }

    /// The principal the request is served as (`nil`: no token rules apply), or a refusal:
    /// 401 for a missing or unverifiable token, 403 for a valid one outside its scopes.
    @inline(never)
    private func authorize(_ request: Request) async throws -> Principal? {
        guard let keys = settings.tokenKeys else {
            try checkSharedToken(request)
            return nil
        }
        let access = RequestAccess.of(request)
        if access == .open || access == .wakeToken { return nil }
        guard let token = RequestHeaders(fields: request.headers).bearerToken else {
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
    private func refuse(_ status: HTTPResponse.Status, _ message: String, who: String, _ access: RequestAccess) -> HTTPProblem {
        DaemonMetrics.deniedRequests.increment()
        let what =
            switch access {
            case .stream(let operation, let stream): "\(operation.rawValue) on '\(stream)'"
            case .everywhere(let operation): "\(operation.rawValue) on every stream"
            case .open, .wakeToken, .anyToken: "the stream list"
            }
        logger.notice("http: denied \(status.code): \(who) asked for \(what): \(message)")
        let shown =
            switch access {
            case .stream(let operation, _): "\(message): \(operation.rawValue) on this stream"
            default: message
            }
        return status == .unauthorized ? .unauthorized(shown) : .forbidden(shown)
    }

    /// Without token rules, the daemon's one `--http-token` if it has one, or a 401.
    @inline(never)
    private func checkSharedToken(_ request: Request) throws {
        guard let token = settings.token else { return }
        // A wake's worker or webhook receiver proves itself with the token of its wake,
        // checked by the subscription (`SubscriptionRoutes`), not with the daemon's.
        if SubscriptionRoutes.carriesWakeToken(request.uri.path) { return }
        let writes = [.put, .post, .delete].contains(request.method)
        guard writes || settings.tokenForReads else { return }
        guard RequestHeaders(fields: request.headers).bearerToken == token else {
            throw HTTPProblem.unauthorized("this needs Authorization: Bearer <token> (--http-token)")
        }
    }
}
