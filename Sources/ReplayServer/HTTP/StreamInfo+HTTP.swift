import Foundation
import Hummingbird
import ReplayModel
import ReplayStore

/// How a stream looks over HTTP.
extension StreamInfo {
    /// Streams created over the socket have no content type: HTTP serves them as bytes.
    var httpContentType: String { config.contentType ?? "application/octet-stream" }

    /// JSON mode (Durable Streams PROTOCOL.md §9.1): messages kept apart, reads answered as an array.
    var isJSON: Bool { config.contentType.map { RequestHeaders.sameMediaType($0, "application/json") } ?? false }

    /// SSE carries `text/*` and JSON as text, everything else as base64 (§5.8).
    var isText: Bool {
        let media = RequestHeaders.mediaType(httpContentType)
        return media.hasPrefix("text/") || media == "application/json"
    }

    var tailOffset: String { StreamOffset.text(after: lastSequence) }

    /// `Stream-Closed`, `Stream-TTL` / `Stream-Expires-At`, and replay's failure header.
    func addState(to headers: inout some AnswerFields) {
        if terminal != nil { addClosure(to: &headers) }
        switch config.expiry {
        case .idle(let seconds): headers.set(.streamTTL, String(seconds))
        case .at(let date): headers.set(.streamExpiresAt, Timestamp.format(date))
        case nil: break
        }
    }

    /// `Stream-Closed: true`, and why, if the stream failed.
    func addClosure(to headers: inout some AnswerFields) {
        headers.set(.streamClosed, "true")
        if let message = terminal?.message { headers.set(.replayFailure, Self.headerSafe(message)) }
    }

    /// A header value cannot hold line breaks or control characters.
    private static func headerSafe(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? " " : Character($0) })
    }

    /// Whether a PUT of these settings re-declares this stream (Durable Streams PROTOCOL.md §5.1: content
    /// type, expiry and closure must match, or it is a conflict).
    func matches(contentType: String, expiry: StreamExpiry?, closed: Bool) -> Bool {
        RequestHeaders.sameMediaType(httpContentType, contentType)
            && config.expiry == expiry && (terminal != nil) == closed
    }
}
