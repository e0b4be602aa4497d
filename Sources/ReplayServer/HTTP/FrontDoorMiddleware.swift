import HTTPTypes
import Hummingbird

/// What every HTTP response gets: the bearer-token check (`--http-token`), and the browser
/// security headers of the Durable Streams PROTOCOL.md §12.7, also on errors.
///
/// CORS is split in two. A preflight is hummingbird's `CORSMiddleware` (`cors`, added
/// before this one). The headers of every other response are set here, and on every
/// response, because `CORSMiddleware` sets them only when the request has an `Origin`,
/// and sends `Access-Control-Expose-Headers` only on a preflight, while a browser reads it
/// from the response itself: without it a page cannot see `Stream-Next-Offset`.
struct FrontDoorMiddleware<Context: RequestContext>: RouterMiddleware {
    let settings: HTTPSettings

    /// The protocol's headers a browser script may read across origins.
    static var exposed: [String] {
        [
            "Stream-Next-Offset", "Stream-Up-To-Date", "Stream-Closed", "Stream-Cursor", "Stream-TTL", "Stream-Expires-At",
            "Stream-SSE-Data-Encoding", "Producer-Epoch", "Producer-Seq", "Producer-Expected-Seq", "Producer-Received-Seq",
            "Replay-Stream-Failed", "ETag", "Location",
        ]
    }

    /// The headers a page may send: the protocol's, and the token.
    static var allowed: [HTTPField.Name] {
        [
            .accept, .authorization, .contentType, .ifNoneMatch, .streamClosed, .streamSeq, .streamTTL, .streamExpiresAt,
            .producerID, .producerEpoch, .producerSeq, .streamForkedFrom, .streamForkOffset, .streamForkSubOffset,
        ]
    }

    /// Preflight answers: any origin, the protocol's methods and headers, cached for a day.
    static var cors: CORSMiddleware<Context> {
        CORSMiddleware(
            allowOrigin: .all, allowHeaders: allowed, allowMethods: [.get, .head, .put, .post, .delete, .options],
            exposedHeaders: exposed, maxAge: .seconds(86_400))
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
        response.headers[.accessControlExposeHeaders] = Self.exposed.joined(separator: ", ")
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
