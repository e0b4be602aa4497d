import Foundation
import Hummingbird
import NIOCore

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
    static func object(_ body: Data) throws(HTTPProblem) -> [String: Any] {
        if body.isEmpty { return [:] }
        guard let parsed = try? JSONSerialization.jsonObject(with: body), let object = parsed as? [String: Any] else {
            throw .invalid("the body must be a JSON object")
        }
        return object
    }
}
