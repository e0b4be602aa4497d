import Foundation
import Hummingbird
import NIOCore
import ReplayAuth
import ReplayModel
import ReplayStore

/// `GET /v1/tail/<stream>?from=<seq>`: the live view's tail, one more reader framed over
/// the stream's `LogCursor`. An SSE response whose `events` carry each event's sequence
/// number, time and payload (text as it is, anything not UTF-8 as base64), which the
/// Durable Streams reads do not (their offsets are positions, and their SSE joins
/// payloads). Unlike those, a tail is for looking: past retention it reports a `gap` and
/// goes on, and `from` past the end waits for it.
///
/// events   data: [{"seq":1,"time":"2026-11-25T10:00:00.000Z","text":"..."}, ...]
/// gap      data: {"from":1,"through":40}
/// control  data: {"next":41,"upToDate":true}        (then `"closed":true` at the end)
struct TailEndpoint: Sendable {
    let hubs: StreamHubs
    let store: EventStore
    let reads: ReadPool
    let keepAlive: Duration
    let parked: ParkedReads
    let leases: StreamLeases

    static let prefix = "/v1/tail/"

    /// The live view's tail checks `read` on its stream itself.
    static func access(_ path: String) -> RequestAccess? {
        path.hasPrefix(prefix) ? .anyToken : nil
    }

    /// `closed`: the connection's close, which ends the response at once.
    func respond(_ request: Request, path: String, closed: EventLoopFuture<Void>) throws -> Response {
        let name = try StreamPath.name(path)
        guard Principal.current.may(.read, on: name) else { throw HTTPProblem.forbidden("the token does not allow reading this stream") }
        guard let hub = hubs[name], !hub.info.isSoftDeleted else { throw HTTPProblem.unknownStream("no stream named '\(name)'") }
        let from: UInt64
        if let text = request.uri.queryParameters["from"] {
            guard let number = UInt64(text) else { throw HTTPProblem.invalid("from takes a sequence number") }
            from = max(1, number)
        } else {
            // By default the last 50 events, then what comes.
            from = hub.info.lastSequence > 50 ? hub.info.lastSequence - 49 : 1
        }
        var fields = HTTPFields()
        fields[.contentType] = "text/event-stream"
        fields[.cacheControl] = "no-cache"
        let cursor = LogCursor(hub: hub, log: PooledStore(store: store, reads: reads), framing: TailFrames(), from: from, retry: .briefly)
        let feed = TailFeed(cursor: cursor, hub: hub, keepAlive: keepAlive)
        return Response(status: .ok, headers: fields, body: SSEReader.body(feed, parked: parked, closed: closed, lease: leases.lease(name)))
    }
}

/// The tail's framing of an SSE response: `events` with sequence numbers and times, a
/// `gap` past retention, and `control` at the tail.
struct TailFeed: SSEFeed {
    var cursor: LogCursor<PooledStore, TailFrames>
    let hub: StreamHub
    let keepAlive: Duration

    var watched: (hub: StreamHub, after: UInt64) { cursor.watched }

    @inline(never)
    mutating func next() async -> (ByteBuffer, SSENext)? {
        var buffer = ByteBuffer()
        switch try? await cursor.move(limit: 200, byteBudget: 256 << 10) {
        case nil:
            return nil
        case .ring(let entries):
            hub.delivered(events: entries.count, bytes: entries.reduce(0) { $0 + $1.payload.count })
            var page = TailFrames.Page()
            for entry in entries {
                entry.payload.withUnsafeBytes { payload in
                    TailFrames.write(sequence: entry.sequence, time: entry.timestamp, key: entry.key?.text, payload: payload, into: &page)
                }
            }
            page.finish(into: &buffer)
        case .stored(let page):
            hub.delivered(events: page.events, bytes: page.payloadBytes)
            var body = page.body
            body.finish(into: &buffer)
        case .gap(let first, let through):
            buffer.writeString("event: gap\ndata: {\"from\":\(first),\"through\":\(through)}\n\n")
        case .caughtUp:
            buffer.writeString("event: control\ndata: {\"next\":\(cursor.next),\"upToDate\":true}\n\n")
            return (buffer, .wait(keepAlive))
        case .ended:
            buffer.writeString("event: control\ndata: {\"next\":\(cursor.next),\"upToDate\":true,\"closed\":true}\n\n")
            return (buffer, .end)
        case .deleted:
            buffer.writeString("event: control\ndata: {\"next\":\(cursor.next),\"deleted\":true}\n\n")
            return (buffer, .end)
        }
        return (buffer, .read)
    }
}

/// The tail's `events` lines, built on the read pool straight from the store's rows.
struct TailFrames: LogFraming {
    struct Page: Sendable {
        var json = "["

        mutating func finish(into buffer: inout ByteBuffer) {
            guard json.count > 1 else { return }
            buffer.writeString("event: events\ndata: ")
            buffer.writeString(json)
            buffer.writeString("]\n\n")
        }
    }

    func emptyPage() -> Page { Page() }

    func append(
        sequence: UInt64, time: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer, trace: UnsafeRawBufferPointer?,
        hash: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer?, to page: inout Page
    ) {
        Self.write(
            sequence: sequence, time: String(decoding: time, as: UTF8.self), key: key.map { String(decoding: $0, as: UTF8.self) },
            payload: payload, into: &page)
    }

    /// `key`: the event's key, if it has one, shown beside its time.
    static func write(sequence: UInt64, time: String, key: String?, payload: UnsafeRawBufferPointer, into page: inout Page) {
        if page.json.count > 1 { page.json += "," }
        page.json += "{\"seq\":\(sequence),\"time\":\"\(time)\","
        if let key, let quoted = try? JSONSerialization.data(withJSONObject: key, options: .fragmentsAllowed) {
            page.json += "\"key\":" + String(decoding: quoted, as: UTF8.self) + ","
        }
        // One JSON string per event: JSONSerialization escapes what SSE and JSON need
        // (line breaks included, so an event stays on one data line).
        if let text = String(validating: payload, as: UTF8.self), let quoted = try? JSONSerialization.data(withJSONObject: text, options: .fragmentsAllowed) {
            page.json += "\"text\":" + String(decoding: quoted, as: UTF8.self)
        } else {
            page.json += "\"base64\":\"" + Data(payload).base64EncodedString() + "\""
        }
        page.json += "}"
    }
}
