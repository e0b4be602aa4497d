import Foundation
import Hummingbird
import NIOCore

/// Every error the HTTP door answers, in one shape: its status, the body
/// `{"error": {"code": …, "message": …}}`, and the headers the protocol asks for beside
/// it (`Producer-Expected-Seq` on a sequence gap, `Retry-After` over a rate,
/// `WWW-Authenticate` on a 401). A program matches the code, a stable word; a person
/// reads the message. What each error means, its code and its status, is in one table:
/// `ErrorTable.swift`.
struct HTTPProblem: HTTPResponseError, Sendable, CustomStringConvertible {
    let status: HTTPResponse.Status
    let code: Code
    let message: String
    var headers: HTTPFields
    /// A claimed wake's holder and generation, members of the error object that the
    /// subscription protocol gives with `ALREADY_CLAIMED`.
    var currentHolder: String?
    var generation: Int?

    init(_ status: HTTPResponse.Status, _ code: Code, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    var description: String { "\(code.rawValue): \(message)" }

    func response(from request: Request, context: some RequestContext) throws -> Response { response }

    var response: Response {
        var response = SubscriptionJSON.response(status, body: body)
        response.headers.append(contentsOf: headers)
        return response
    }

    /// The body, `{"error": {"code": …, "message": …}}`.
    var body: Data {
        var error: [String: Any] = ["code": code.rawValue, "message": message]
        if let currentHolder { error["current_holder"] = currentHolder }
        if let generation { error["generation"] = generation }
        return SubscriptionJSON.data(["error": error])
    }
}
