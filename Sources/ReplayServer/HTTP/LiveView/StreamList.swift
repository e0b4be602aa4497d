import Foundation
import Hummingbird
import ReplayAuth
import ReplayStore

/// `GET /v1/streams`: every stream as the live view lists it (JSON), from memory, with its
/// consumer groups.
struct StreamList: Sendable {
    let hubs: StreamHubs
    let store: EventStore

    struct Group: Encodable {
        let name: String
        let pending: Int
        /// Members holding events (on any daemon) or connected to this one.
        let members: Int
        let lag: UInt64
        let deadLettered: UInt64

        enum CodingKeys: String, CodingKey {
            case name, pending, members, lag
            case deadLettered = "dead_lettered"
        }
    }

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
        let groups: [Group]

        enum CodingKeys: String, CodingKey {
            case name, events, bytes, state, subscribers, groups
            case contentType = "content_type"
            case firstSeq = "first_seq"
            case lastSeq = "last_seq"
            case nextOffset = "next_offset"
        }
    }

    func respond() throws -> Response {
        // Only the streams the request's token may read (all, without token rules).
        let principal = Principal.current
        let entries = hubs.all.map { ($0.info, $0.subscriberCount) }.filter { !$0.0.isSoftDeleted && principal.may(.read, on: $0.0.name) }.map {
            info, subscribers in
            Entry(
                name: info.name, contentType: info.httpContentType, firstSeq: info.firstSequence, lastSeq: info.lastSequence,
                events: info.eventCount, bytes: info.byteCount,
                state: info.terminal.map { $0 == .completed ? "closed" : "failed" } ?? "open",
                subscribers: subscribers, nextOffset: info.tailOffset, groups: groups(of: info))
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(entries))))
    }

    private func groups(of info: StreamInfo) -> [Group] {
        (store.groups(of: info.name) ?? [:]).values.sorted { $0.name < $1.name }.map { group in
            let members = Set(group.pending.values.compactMap(\.member)).union(hubs.groupMembers.connected(group: group.name, of: info.name))
            return Group(
                name: group.name, pending: group.pending.count, members: members.count,
                lag: info.lastSequence - min(info.lastSequence, group.deliveredSequence), deadLettered: group.deadLettered)
        }
    }
}
