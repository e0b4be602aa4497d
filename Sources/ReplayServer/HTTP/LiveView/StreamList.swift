import Foundation
import Hummingbird
import ReplayStore

/// `GET /v1/streams`: every stream as the live view lists it (JSON), from memory.
struct StreamList: Sendable {
    let hubs: StreamHubs

    struct Entry: Encodable {
        let name: String
        let contentType: String
        let firstSeq: UInt64
        let lastSeq: UInt64
        let events: Int
        let bytes: Int
        /// `open`, `closed` or `failed`.
        let state: String
        let subscribers: Int
        let nextOffset: String

        enum CodingKeys: String, CodingKey {
            case name, events, bytes, state, subscribers
            case contentType = "content_type"
            case firstSeq = "first_seq"
            case lastSeq = "last_seq"
            case nextOffset = "next_offset"
        }
    }

    func respond() throws -> Response {
        let entries = hubs.all.map { ($0.info, $0.subscriberCount) }.filter { !$0.0.isSoftDeleted }.map { info, subscribers in
            Entry(
                name: info.name, contentType: info.httpContentType, firstSeq: info.firstSequence, lastSeq: info.lastSequence,
                events: info.eventCount, bytes: info.byteCount,
                state: info.terminal.map { $0 == .completed ? "closed" : "failed" } ?? "open",
                subscribers: subscribers, nextOffset: info.tailOffset)
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(entries))))
    }
}
