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
    let views: StreamViews

    /// A stream as INFO describes it (the same fields, by the same names), and what the
    /// page shows besides: its offset and state in the HTTP protocol's words, and its readers.
    struct Entry: Encodable {
        let stream: StreamDescription
        let contentType: String
        let nextOffset: String
        /// `open`, `closed` or `failed`.
        let state: String
        let consumers: [ConsumerDescription]
        let groups: [GroupDescription]

        enum CodingKeys: String, CodingKey {
            case state, consumers, groups
            case contentType = "content_type"
            case nextOffset = "next_offset"
        }

        func encode(to encoder: any Encoder) throws {
            try stream.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(contentType, forKey: .contentType)
            try container.encode(nextOffset, forKey: .nextOffset)
            try container.encode(state, forKey: .state)
            try container.encode(consumers, forKey: .consumers)
            try container.encode(groups, forKey: .groups)
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
        let hubs = views.hubs.all.filter { hub in
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
            stream: views.describe(info), contentType: info.httpContentType, nextOffset: info.tailOffset,
            state: info.terminal.map { $0 == .completed ? "closed" : "failed" } ?? "open",
            consumers: views.consumers(of: info), groups: views.groups(of: info))
    }
}
