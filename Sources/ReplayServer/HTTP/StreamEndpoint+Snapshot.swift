import Hummingbird
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
            let rest = try await log.snapshot(hub.name, through: point).drop { $0 <= after }
            let (page, taken) = try await log.read(
                hub.name, at: rest.prefix(HTTPCursor.chunkEvents), byteBudget: HTTPCursor.chunkBytes,
                framing: Payloads(filter: query.filter, keys: query.keys))
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
