import Foundation
import ReplayModel

/// A scheduled event as the daemon describes it: the reply to a scheduled PUB (`+INFO`,
/// without the payload) and each entry of `SCHEDULED` (`+LIST`). Times are ISO-8601 UTC
/// with milliseconds; the payload is `payload` when it is UTF-8, else `payload_base64`.
public struct ScheduledDescription: Codable, Sendable, Equatable {
    public var id: Int64
    public var stream: String
    public var due: String
    public var created: String?
    public var key: String?
    public var size: Int?
    public var text: String?
    public var base64: String?

    enum CodingKeys: String, CodingKey {
        case id, stream, due, created, key, size
        case text = "payload"
        case base64 = "payload_base64"
    }

    public init(id: Int64, stream: String, due: String, created: String? = nil, key: String? = nil, payload: Data? = nil) {
        self.id = id
        self.stream = stream
        self.due = due
        self.created = created
        self.key = key
        guard let payload else { return }
        size = payload.count
        if let text = String(data: payload, encoding: .utf8) {
            self.text = text
        } else {
            base64 = payload.base64EncodedString()
        }
    }

    /// The payload, as it was published (`nil` in a PUB's reply, which does not repeat it).
    public var payload: Data? {
        if let text { return Data(text.utf8) }
        return base64.flatMap { Data(base64Encoded: $0) }
    }
}
