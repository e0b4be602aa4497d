import Foundation
import ReplayModel

/// The reply to `GET <stream> <key>` (`+INFO`, JSON): the key's newest event, its sequence
/// number and commit time, and its payload as `payload` when it is UTF-8, else as
/// `payload_base64` (as `replayctl subscribe --json` gives an event).
public struct KeyedValue: Codable, Sendable, Equatable {
    public var stream: String
    public var key: String
    public var seq: UInt64
    public var time: String
    public var text: String?
    public var base64: String?

    enum CodingKeys: String, CodingKey {
        case stream, key, seq, time
        case text = "payload"
        case base64 = "payload_base64"
    }

    public init(stream: String, key: String, seq: UInt64, time: String, payload: Data) {
        self.stream = stream
        self.key = key
        self.seq = seq
        self.time = time
        if let text = String(data: payload, encoding: .utf8) {
            self.text = text
        } else {
            base64 = payload.base64EncodedString()
        }
    }

    /// The payload, as it was published.
    public var payload: Data {
        if let text { return Data(text.utf8) }
        return base64.flatMap { Data(base64Encoded: $0) } ?? Data()
    }
}
