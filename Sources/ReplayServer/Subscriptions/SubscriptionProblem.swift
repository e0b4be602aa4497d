import Foundation
import Hummingbird
import NIOCore

/// A subscription request refused, in the Durable Streams protocol's words (§7): an HTTP
/// status, a stable code, a message, and for some codes more fields (the current holder of
/// a claimed lease). Rendered as `{"error": {"code": …, "message": …}}`.
struct SubscriptionProblem: Error, Sendable, CustomStringConvertible {
    let status: HTTPResponse.Status
    let code: String
    let message: String
    var currentHolder: String? = nil
    var generation: Int? = nil

    static func invalid(_ message: String) -> Self { Self(status: .badRequest, code: "INVALID_REQUEST", message: message) }
    static func notFound(_ id: String) -> Self { Self(status: .notFound, code: "SUBSCRIPTION_NOT_FOUND", message: "no subscription named '\(id)'") }
    static let fenced = Self(status: .conflict, code: "FENCED", message: "the wake's generation is stale: another wake has replaced it, or it was finished")
    static func invalidOffset(_ message: String) -> Self { Self(status: .conflict, code: "INVALID_OFFSET", message: message) }

    var description: String { "\(code): \(message)" }

    var response: Response {
        var error: [String: Any] = ["code": code, "message": message]
        if let currentHolder { error["current_holder"] = currentHolder }
        if let generation { error["generation"] = generation }
        return SubscriptionJSON.response(status, ["error": error])
    }
}

/// JSON bodies of the subscription API: built as dictionaries (their shapes are the
/// protocol's, with optional members left out rather than written as null).
enum SubscriptionJSON {
    static func data(_ object: Any) -> Data {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    }

    static func response(_ status: HTTPResponse.Status, _ object: Any, contentType: String = "application/json") -> Response {
        response(status, body: data(object), contentType: contentType)
    }

    static func response(_ status: HTTPResponse.Status, body: Data, contentType: String = "application/json") -> Response {
        var fields = HTTPFields()
        fields[.contentType] = contentType
        fields[.cacheControl] = "no-store"
        return Response(status: status, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The request's body as a JSON object: `nil` body → empty object.
    static func object(_ body: Data) throws(SubscriptionProblem) -> [String: Any] {
        if body.isEmpty { return [:] }
        guard let parsed = try? JSONSerialization.jsonObject(with: body), let object = parsed as? [String: Any] else {
            throw .invalid("the body must be a JSON object")
        }
        return object
    }
}
