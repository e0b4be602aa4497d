import Hummingbird

/// What every HTTP response gets: the bearer-token check (`--http-token`), and the browser
/// security headers of the Durable Streams PROTOCOL.md §12.7, also on errors.
struct FrontDoorMiddleware<Context: RequestContext>: RouterMiddleware {
    let settings: HTTPSettings

    /// The protocol's headers a browser script may read across origins.
    static var exposed: String {
        "Stream-Next-Offset, Stream-Up-To-Date, Stream-Closed, Stream-Cursor, Stream-TTL, Stream-Expires-At, "
            + "Stream-SSE-Data-Encoding, Producer-Epoch, Producer-Seq, Producer-Expected-Seq, Producer-Received-Seq, "
            + "Replay-Stream-Failed, ETag, Location"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            try authorize(request)
            response = try await next(request, context)
        } catch let error as HTTPResponseError {
            response = try error.response(from: request, context: context)
        }
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.crossOriginResourcePolicy] = "cross-origin"
        response.headers[.accessControlAllowOrigin] = "*"
        response.headers[.accessControlExposeHeaders] = Self.exposed
        return response
    }

    private func authorize(_ request: Request) throws {
        guard let token = settings.token else { return }
        let writes = [.put, .post, .delete].contains(request.method)
        guard writes || settings.tokenForReads else { return }
        guard request.headers[.authorization] == "Bearer \(token)" else {
            throw HTTPError(
                .unauthorized, headers: [.wwwAuthenticate: "Bearer realm=\"replay\""], message: "this needs Authorization: Bearer <token> (--http-token)")
        }
    }
}
