import Foundation
import Hummingbird
import ReplayAuth
import ReplayProtocol
import ReplayStore
import ServiceLifecycle

/// `GET /v1/streams`: the streams as the live view lists them (JSON), from memory, with
/// their durable consumers, consumer groups, sources and derivations, and the events delivered from
/// each on this daemon (whose change over time is the delivery rate).
///
/// A page at a time for many streams: `q` keeps the names that contain it, `offset` and
/// `limit` cut the sorted list, and `Replay-Stream-Count` says how many matched.
/// `live=sse` sends the page again every second as an `event: streams` (`{"total": N,
/// "streams": [...]}`) until the client leaves: how the page stays live with one request.
struct StreamList: Sendable {
    let hubs: StreamHubs
    let store: EventStore
    let sources: SourceRegistry
    let derivations: DerivationRegistry

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

    struct Consumer: Encodable {
        let name: String
        let lag: UInt64
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
        let consumers: [Consumer]
        let delivered: Int
        let source: SourceDescription?
        /// A derived stream's derivation: its inputs, lag, rate and status.
        let derivation: DerivationDescription?

        enum CodingKeys: String, CodingKey {
            case name, events, bytes, state, subscribers, groups, consumers, delivered, source, derivation
            case contentType = "content_type"
            case firstSeq = "first_seq"
            case lastSeq = "last_seq"
            case nextOffset = "next_offset"
        }
    }

    struct Query {
        var filter: String?
        var offset = 0
        var limit = Int.max
        var live = false

        init(_ request: Request) throws {
            let query = request.uri.queryParameters
            filter = query["q"].map(String.init).flatMap { $0.isEmpty ? nil : $0 }
            if let text = query["offset"] {
                guard let number = Int(text), number >= 0 else { throw HTTPProblem.invalid("offset takes a count, 0 or more") }
                offset = number
            }
            if let text = query["limit"] {
                guard let number = Int(text), number > 0 else { throw HTTPProblem.invalid("limit takes a count, 1 or more") }
                limit = number
            }
            switch query["live"] {
            case nil: break
            case "sse": live = true
            default: throw HTTPProblem.invalid("live takes sse")
            }
        }
    }

    func respond(_ request: Request) throws -> Response {
        let query = try Query(request)
        // Only the streams the request's token may read (all, without token rules).
        let principal = Principal.current
        var fields = HTTPFields()
        fields[.cacheControl] = "no-store"
        guard query.live else {
            let (total, entries) = page(query, principal: principal)
            fields[.contentType] = "application/json"
            fields[.replayStreamCount] = String(total)
            return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: try JSONEncoder().encode(entries))))
        }
        fields[.contentType] = "text/event-stream"
        let body = ResponseBody { writer in
            while !Task.isCancelled, !Task.isShuttingDownGracefully {
                let (total, entries) = page(query, principal: principal)
                var buffer = ByteBuffer(string: "event: streams\ndata: {\"total\":\(total),\"streams\":")
                buffer.writeBytes(try JSONEncoder().encode(entries))
                buffer.writeString("}\n\n")
                try await writer.write(buffer)
                try? await Task.sleep(for: .seconds(1))
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: fields, body: body)
    }

    /// The query's page of streams, sorted by name, and how many matched in all.
    func page(_ query: Query, principal: Principal) -> (total: Int, entries: [Entry]) {
        let hubs = self.hubs.all.filter { hub in
            (query.filter.map { hub.name.localizedCaseInsensitiveContains($0) } ?? true) && !hub.info.isSoftDeleted
                && principal.may(.read, on: hub.name)
        }
        .sorted { $0.name < $1.name }
        let window = hubs.dropFirst(query.offset).prefix(query.limit)
        return (hubs.count, window.map(entry))
    }

    private func entry(_ hub: StreamHub) -> Entry {
        let info = hub.info
        return Entry(
            name: info.name, contentType: info.httpContentType, firstSeq: info.firstSequence, lastSeq: info.lastSequence,
            events: info.eventCount, bytes: info.byteCount,
            state: info.terminal.map { $0 == .completed ? "closed" : "failed" } ?? "open",
            subscribers: hub.subscriberCount, nextOffset: info.tailOffset, groups: groups(of: info),
            consumers: (store.consumers(of: info.name) ?? []).sorted { $0.name < $1.name }.map {
                Consumer(name: $0.name, lag: info.lastSequence - min(info.lastSequence, $0.ackedSequence))
            },
            delivered: hub.delivered, source: sources.describe(info.name), derivation: derivations.describe(info.name))
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
