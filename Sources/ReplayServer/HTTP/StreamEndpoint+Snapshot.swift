import Foundation
import Hummingbird
import NIOCore
import ReplayModel
import ReplayStore

/// `GET …?offset=snapshot` (replay's extension): the current event of every key as of the
/// stream's tail, then the tail's offset, from which the reader follows the stream as
/// usual (catch-up, long-poll or SSE) with no gap and no duplicate: the snapshot over HTTP.
extension StreamEndpoint {
    /// One response of the snapshot at `point`, after event `after`: up to a chunk of events
    /// (and 64 keyed or traced ones named), then `Stream-Next-Offset` where the snapshot
    /// goes on (`snapshot-<point>-<after>`) or, once it is all sent, the point's own offset.
    func readSnapshot(_ hub: StreamHub, _ query: ReadQuery, point: UInt64, after: UInt64) async throws -> Response {
        let lease = leases.lease(hub.name)
        defer { lease.dispose() }
        let info = hub.info
        guard point <= info.lastSequence else {
            throw HTTPProblem.invalid("a snapshot at \(point) is beyond the stream's tail, \(info.tailOffset)")
        }
        let log = PooledStore(store: store, reads: reads)
        let chunk: HTTPCursor.Chunk
        var next: String
        do {
            // A store that is away is waited for briefly, then 503, as any read.
            let retry = CursorRetry.briefly
            let rest = try await retry.attempts { try await log.snapshot(hub.name, through: point) }.drop { $0 <= after }
            let (page, taken) = try await retry.attempts {
                try await log.read(
                    hub.name, at: rest.prefix(HTTPCursor.chunkEvents), byteBudget: HTTPCursor.chunkBytes,
                    framing: Payloads(filter: query.filter, keys: query.keys))
            }
            var kept = page.body
            if let last = kept.keepAnnotated(atMost: Self.annotatedPerResponse) {
                next = StreamOffset.snapshotText(point: point, after: last)
            } else if taken < rest.count {
                next = StreamOffset.snapshotText(point: point, after: rest[rest.startIndex + taken - 1])
            } else {
                next = StreamOffset.text(after: point)
            }
            chunk = kept
        } catch let error as StoreError {
            // A corrupt event: 500, with the error that names it, never its bytes.
            throw HTTPProblem(error)
        }
        let done = next == StreamOffset.text(after: point)
        var fields = readHeaders(info, next: point, upToDate: done && point == hub.info.lastSequence, closed: false)
        fields[.streamNextOffset] = next
        fields[.cacheControl] = "no-store"
        addAnnotations(chunk.annotated, of: info.name, to: &fields)
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: body(chunk, info)))
    }
}

extension StreamEndpoint {
    /// `GET …?key=<key>` (replay's extension): the key's current value, the payload of its
    /// newest retained event, with its sequence number in `Replay-Seq`; `404 UNKNOWN_KEY`
    /// when there is none or it is the key's tombstone, as the socket's `GET` answers.
    func readValue(of key: EventKey, in hub: StreamHub) async throws -> Response {
        let (store, name) = (self.store, hub.name)
        let event: StoredEvent?
        do {
            event = try await reads.run { try store.latest(name, key: key) }
        } catch let error as StoreError {
            throw HTTPProblem(error)
        }
        guard let event, !event.payload.isEmpty else {
            let why = event == nil ? "no retained event has key '\(key)'" : "key '\(key)' was deleted (a tombstone at seq \(event!.sequence))"
            throw HTTPProblem(.notFound, HTTPProblem.Code(.unknownKey), "stream '\(name)': \(why)")
        }
        var fields = HTTPFields()
        fields[.contentType] = hub.info.httpContentType
        fields[.replaySeq] = String(event.sequence)
        fields[.cacheControl] = "no-store"
        if let hash = event.hash { fields[.replayChainHash] = hash.hex }
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(data: event.payload)))
    }
}
