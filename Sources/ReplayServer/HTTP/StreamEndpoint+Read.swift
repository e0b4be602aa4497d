import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import ReplayDerive
import ReplayModel
import ReplayStore

/// GET: catch-up (§5.6), long-poll (§5.7) and SSE (§5.8), all over an `HTTPCursor`.
extension StreamEndpoint {
    /// A GET's query: `offset`, `live`, `cursor`, `filter` (replay's extension: a jq
    /// program each event passes through for this reader), `keys` (replay's extension:
    /// `on` names each keyed event's key) and `key` (replay's extension: that key's current
    /// value alone), each at most once.
    struct ReadQuery {
        var offset: StreamOffset.Request
        var live: Live
        var cursor: UInt64?
        var filter: EventFilter?
        var keys = false
        var key: EventKey?

        enum Live: Equatable {
            case catchUp
            case longPoll
            case sse
        }

        @inline(never)  // else its messages take the async `read`'s frame
        init(_ query: FlatDictionary<Substring, Substring>, budget: JQProgram.Budget) throws {
            func single(_ key: Substring) throws -> Substring? {
                let found = query[values: key]
                guard found.count <= 1 else { throw HTTPProblem.invalid("give '\(key)' once") }
                return found.first
            }
            guard let offset = StreamOffset.parse(try single("offset")) else {
                throw HTTPProblem.invalid("offset takes -1, now, snapshot, or a Stream-Next-Offset this server returned")
            }
            self.offset = offset
            switch try single("live") {
            case nil: live = .catchUp
            case "long-poll": live = .longPoll
            case "sse": live = .sse
            default: throw HTTPProblem.invalid("live takes long-poll or sse")
            }
            if live != .catchUp, query["offset"] == nil {
                throw HTTPProblem.invalid("a live read needs an offset (-1 for the beginning, now for the tail)")
            }
            if live != .catchUp, case .snapshot = offset {
                throw HTTPProblem.invalid("read a snapshot with a catch-up GET, then follow the stream from its Stream-Next-Offset")
            }
            cursor = try single("cursor").flatMap { UInt64($0) }
            if let text = try single("key") {
                guard let key = EventKey(text) else { throw HTTPProblem.invalid("key takes \(EventKey.format)") }
                guard query["offset"] == nil, live == .catchUp else {
                    throw HTTPProblem.invalid("key= reads one key's current value: it takes no offset and no live mode")
                }
                self.key = key
            }
            switch try single("keys") {
            case nil, "off": keys = false
            case "on": keys = true
            default: throw HTTPProblem.invalid("keys takes on or off")
            }
            if let program = try single("filter") {
                do throws(JQProgram.Failure) {
                    filter = try EventFilter(String(program), budget: budget)
                } catch {
                    throw HTTPProblem.invalid("the filter is refused: \(error.message)")
                }
            }
        }
    }

    /// Split in three so that an SSE response, which holds its task for as long as the
    /// reader stays, never allocates the frames of the reads that wait: an async function's
    /// locals live in a frame its task allocates, and the task keeps its deepest frames'
    /// memory while it lives (SSE readers are held by the thousand).
    func read(_ stream: StreamRequest, _ request: Request, closed: EventLoopFuture<Void>) async throws -> Response {
        switch try start(stream.name, request, closed: closed) {
        case .answered(let response): return response
        case .expired: try await expire(stream.name)
        case .read(let hub, let query):
            if let key = query.key { return try await readValue(of: key, in: hub) }
            if case .snapshot(let point, let after) = query.offset {
                return try await readSnapshot(hub, query, point: point ?? hub.info.lastSequence, after: after)
            }
            return try await readChunk(hub, query, stream.headers)
        }
    }

    private enum ReadStart {
        /// The response, which needs no wait: SSE (its body reads on) and a catch-up from `now`.
        case answered(Response)
        /// The stream is past its expiry.
        case expired
        /// The response needs a read of the store or a wait.
        case read(StreamHub, ReadQuery)
    }

    @inline(never)
    private func start(_ name: String, _ request: Request, closed: EventLoopFuture<Void>) throws -> ReadStart {
        let query = try ReadQuery(request.uri.queryParameters, budget: programBudget)
        guard let hub = try liveHub(name) else { return .expired }
        store.noteRead(name)
        if let response = try respondAtOnce(hub, query, closed: closed) { return .answered(response) }
        return .read(hub, query)
    }

    /// An SSE read of `name` as a reader with no task serves it (`ParkedEventStreams`):
    /// its response's fields and its feed; `nil` for any other read, and for one the router
    /// refuses or must expire, which then goes on to the router to be answered.
    func parkedEventStream(_ name: String, query: FlatDictionary<Substring, Substring>) -> (HTTPFields, DurableStreamsFeed)? {
        guard let query = try? ReadQuery(query, budget: programBudget), query.live == .sse, let hub = try? liveHub(name),
            let position = try? position(query, hub.info)
        else { return nil }
        store.noteRead(name)
        let cursor = HTTPCursor(hub: hub, store: store, reads: reads, after: position, filter: query.filter, keys: query.keys)
        var (fields, feed) = eventStream(cursor, info: hub.info, clientCursor: query.cursor)
        // Its chunks are written below the HTTP encoder (`ParkedEventStream`).
        feed.asHTTPChunks = true
        return (fields, feed)
    }

    /// Where the read starts: after the event the offset names.
    private func position(_ query: ReadQuery, _ info: StreamInfo) throws -> UInt64 {
        switch query.offset {
        case .start: return info.firstSequence - 1
        case .now: return info.lastSequence
        case .after(let sequence):
            guard sequence <= info.lastSequence else {
                throw HTTPProblem.invalid("offset \(StreamOffset.text(after: sequence)) is beyond the stream's tail, \(info.tailOffset)")
            }
            guard sequence + 1 >= info.firstSequence else { throw gone(info) }
            return sequence
        case .snapshot: throw HTTPProblem.invalid("a snapshot is read with a catch-up GET")
        }
    }

    /// The responses that need no wait: SSE (its body reads on) and a catch-up from `now`.
    @inline(never)
    private func respondAtOnce(_ hub: StreamHub, _ query: ReadQuery, closed: EventLoopFuture<Void>) throws -> Response? {
        let info = hub.info
        switch query.live {
        case .sse:
            let cursor = HTTPCursor(hub: hub, store: store, reads: reads, after: try position(query, info), filter: query.filter, keys: query.keys)
            return sse(cursor, info: info, clientCursor: query.cursor, closed: closed)
        case .catchUp where query.offset == .now:
            var fields = readHeaders(info, next: info.lastSequence, upToDate: true, closed: info.terminal != nil)
            fields[.cacheControl] = "no-store"
            return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: emptyBody(info)))
        case .catchUp, .longPoll:
            return nil
        }
    }

    /// A catch-up or long-poll response: one chunk, after a wait for a commit if the
    /// long poll finds nothing.
    private func readChunk(_ hub: StreamHub, _ query: ReadQuery, _ headers: RequestHeaders) async throws -> Response {
        let lease = leases.lease(hub.name)
        defer { lease.dispose() }
        let info = hub.info
        let position = try position(query, info)
        var cursor = HTTPCursor(hub: hub, store: store, reads: reads, after: position, filter: query.filter, keys: query.keys)
        guard query.live == .longPoll else {
            var chunk = try await chunk(&cursor, info)
            let next = chunk.keepAnnotated(atMost: Self.annotatedPerResponse) ?? cursor.position
            return catchUpResponse(chunk, from: position, next: next, info: info, ifNoneMatch: headers.ifNoneMatch)
        }
        DaemonMetrics.longPolls.increment()
        defer { DaemonMetrics.longPolls.decrement() }
        var chunk = try await chunk(&cursor, info)
        if chunk.isEmpty, chunk.terminal == nil {
            if await LiveWait.wait(on: cursor.watched, timeout: settings.longPollTimeout, parked: parked) == .committed {
                chunk = try await self.chunk(&cursor, info)
            }
        }
        let next = chunk.keepAnnotated(atMost: Self.annotatedPerResponse) ?? cursor.position
        let latest = hub.info
        var fields = readHeaders(latest, next: next, upToDate: chunk.upToDate, closed: chunk.terminal != nil)
        if chunk.terminal == nil { fields[.streamCursor] = String(LiveCursor.next(after: query.cursor)) }
        if chunk.isEmpty {
            fields[.contentType] = nil
            return Response(status: .noContent, headers: fields)
        }
        addAnnotations(chunk.annotated, of: info.name, to: &fields)
        if let hash = chunk.hash(endingAt: next) { fields[.replayChainHash] = hash.hex }
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: body(chunk, info)))
    }

    /// The most traced or keyed events one catch-up or long-poll response names: their
    /// trace contexts and keys go in headers (about 80 bytes each for a trace context, a
    /// key's length and 20 for a key), and proxies and clients commonly refuse responses
    /// whose headers pass 8 to 16 KB. A response ends before the next one; the client's
    /// next read starts there. (Keys are named only for a reader that asks, `?keys=on`, so
    /// that a keyed stream's responses are not cut for readers that never look at them.)
    static let annotatedPerResponse = 64

    /// `Replay-Traceparent`: each traced event of the response, as a Structured Field
    /// list (RFC 9651) of its trace context with the index of its message in the body
    /// (from 0) and its sequence number: `"00-…-01";index=0;seq=41, …`. `Replay-Key`: each
    /// keyed event's key the same way, `"customer-7";index=0;seq=41, …` (a key beyond
    /// printable ASCII as a Display String, `%"caf%c3%a9"`).
    func addAnnotations(_ annotated: [HTTPCursor.AnnotatedMessage], of stream: String, to fields: inout HTTPFields) {
        guard !annotated.isEmpty else { return }
        tracer.delivered(annotated, of: stream)
        let traces = annotated.compactMap { message in
            message.traceParent.map { "\"\($0)\";index=\(message.index);seq=\(message.sequence)" }
        }
        if !traces.isEmpty { fields[.replayTraceparent] = traces.joined(separator: ", ") }
        let keys = annotated.compactMap { message in
            message.key.map { "\(StructuredFieldText.string($0));index=\(message.index);seq=\(message.sequence)" }
        }
        if !keys.isEmpty { fields[.replayKey] = keys.joined(separator: ", ") }
    }

    private func chunk(_ cursor: inout HTTPCursor, _ info: StreamInfo) async throws -> HTTPCursor.Chunk {
        do {
            return try await cursor.chunk()
        } catch HTTPCursor.Failure.gone {
            throw gone(info)
        } catch HTTPCursor.Failure.deleted {
            throw HTTPProblem.unknownStream("stream '\(info.name)' was deleted")
        } catch HTTPCursor.Failure.corrupt(let error) {
            // A corrupt event: 500, with the error that names it, never its bytes.
            throw HTTPProblem(error)
        }
    }

    private func gone(_ info: StreamInfo) -> HTTPProblem {
        HTTPProblem(
            .gone, .notRetained,
            "events before offset \(StreamOffset.text(after: info.firstSequence - 1)) of stream '\(info.name)' are no longer retained",
            headers: [.streamNextOffset: StreamOffset.text(after: info.firstSequence - 1)])
    }

    private func catchUpResponse(
        _ chunk: HTTPCursor.Chunk, from position: UInt64, next: UInt64, info: StreamInfo, ifNoneMatch: String?
    ) -> Response {
        let closed = chunk.terminal != nil
        var fields = readHeaders(info, next: next, upToDate: chunk.upToDate, closed: closed)
        let etag = Self.etag(info, from: position, to: next, closed: closed)
        fields[.eTag] = etag
        fields[.cacheControl] =
            settings.token != nil && settings.tokenForReads
            ? "private, max-age=60, stale-while-revalidate=300" : "public, max-age=60, stale-while-revalidate=300"
        if ifNoneMatch == etag {
            fields[.contentType] = nil
            return Response(status: .notModified, headers: fields)
        }
        addAnnotations(chunk.annotated, of: info.name, to: &fields)
        if let hash = chunk.hash(endingAt: next) { fields[.replayChainHash] = hash.hex }
        return Response(status: .ok, headers: fields, body: ResponseBody(byteBuffer: body(chunk, info)))
    }

    /// The same range of an immutable log is the same bytes; closing changes the tag (§10.1),
    /// and so does a new stream of the same name (its creation time).
    static func etag(_ info: StreamInfo, from: UInt64, to: UInt64, closed: Bool) -> String {
        "\"\(info.name)@\(Timestamp.millis(info.createdAt)):\(from):\(to)\(closed ? ":c" : "")\""
    }

    func readHeaders(_ info: StreamInfo, next: UInt64, upToDate: Bool, closed: Bool) -> HTTPFields {
        var fields = HTTPFields()
        fields[.contentType] = info.httpContentType
        fields[.streamNextOffset] = StreamOffset.text(after: next)
        if upToDate { fields[.streamUpToDate] = "true" }
        if closed { info.addClosure(to: &fields) }
        return fields
    }

    private func emptyBody(_ info: StreamInfo) -> ByteBuffer {
        info.isJSON ? ByteBuffer(string: "[]") : ByteBuffer()
    }

    /// A response body: the events' bytes one after another, or a JSON array of messages.
    func body(_ chunk: HTTPCursor.Chunk, _ info: StreamInfo) -> ByteBuffer {
        guard info.isJSON else { return chunk.bytes }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(chunk.bytes.readableBytes + chunk.sizes.count + 2)
        buffer.writeStaticString("[")
        for (index, var payload) in chunk.payloads.enumerated() {
            if index > 0 { buffer.writeStaticString(",") }
            // An empty message (a key's tombstone) has no JSON form: it reads as null.
            if payload.readableBytes == 0 { buffer.writeStaticString("null") }
            buffer.writeBuffer(&payload)
        }
        buffer.writeStaticString("]")
        return buffer
    }
}
