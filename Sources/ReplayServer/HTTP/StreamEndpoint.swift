import Foundation
import Hummingbird
import Logging
import NIOCore
import ReplayAuth
import ReplayDerive
import ReplayModel
import ReplayProtocol
import ReplayStore

/// The Durable Streams protocol on `/v1/stream/<name>`: PUT creates, POST appends (and
/// closes), GET reads (catch-up, long-poll, SSE), HEAD describes, DELETE deletes. Every
/// write is one `StreamWrite` to the store's writer; every read is an `HTTPCursor` over
/// the stream's hub. Nothing here touches SQLite on an event loop or in the cooperative
/// pool: writes complete on the writer's thread, reads run on the read pool.
struct StreamEndpoint: Sendable {
    static let prefix = "/v1/stream/"

    let store: EventStore
    let hubs: StreamHubs
    let reads: ReadPool
    let settings: HTTPSettings
    let maxPayload: Int
    /// What a GET holds while it reads: lazy sources and derivations connect, refcount
    /// ones run while a long poll waits or an SSE reader stays.
    let leases: StreamLeases
    /// What a reader's `?filter=` may spend on one event (the daemon's `--jq-*-limit`).
    let programBudget: JQProgram.Budget
    let logger: Logger
    /// Spans of traced events (`--otlp-endpoint`), or `.off`.
    var tracer = EventTracer.off
    /// The live reads parked here, ended at the door's shutdown (`HTTPFrontDoor.run`).
    let parked = ParkedReads()

    /// The protocol's routes, on hummingbird's router: a method each, the stream's name
    /// the rest of the path (it may hold `/`).
    func addRoutes<Context: RequestContext & ConnectionClosingContext>(to streams: RouterGroup<Context>) {
        streams.put("**") { request, context in try await create(StreamRequest(request, context: context), request) }
        streams.post("**") { request, context in try await append(StreamRequest(request, context: context), request) }
        streams.get("**") { request, context in
            try await read(StreamRequest(request, context: context), request, closed: context.connectionClosed)
        }
        streams.head("**") { request, context in try await head(StreamRequest(request, context: context).name) }
        streams.delete("**") { request, context in try await delete(StreamRequest(request, context: context).name) }
    }

    /// The operation a request does to its stream (`StreamRequest`).
    static func access(_ method: HTTPRequest.Method, _ path: String, fields: HTTPFields) -> RequestAccess? {
        do {
            return try StreamRequest.at(path, method: method, fields: fields).map { .stream($0.operation, $0.name) }
        } catch {
            return .anyToken
        }
    }

    /// The stream's hub; a stream past its expiry is deleted now (rather than at the next
    /// retention pass) and is not found. (The checks are a plain function: an async
    /// function's locals, the messages' among them, take its task's frame on every call.)
    func hub(_ name: String) async throws -> StreamHub {
        if let hub = try liveHub(name) { return hub }
        try await expire(name)
    }

    /// The hub of a stream that is there, `nil` for one past its expiry (then `expire`), or
    /// the refusal.
    @inline(never)
    func liveHub(_ name: String) throws -> StreamHub? {
        guard let hub = hubs[name] else { throw HTTPProblem.unknownStream("no stream named '\(name)'") }
        if hub.info.isSoftDeleted {
            throw HTTPProblem(.gone, .streamDeleted, "stream '\(name)' was deleted; its events are kept only for its forks")
        }
        return store.isExpired(name) ? nil : hub
    }

    /// Deletes a stream found past its expiry, and answers that it is not found.
    @inline(never)
    func expire(_ name: String) async throws -> Never {
        try? await store.delete(name)
        throw HTTPProblem.unknownStream("stream '\(name)' expired")
    }

    func body(of request: Request) async throws -> Data {
        var request = request
        do {
            let buffer = try await request.collectBody(upTo: maxPayload)
            return buffer.readableData
        } catch let error as NIOTooManyBytesError {
            _ = error
            throw HTTPProblem.tooLarge("the body is over the largest payload accepted, \(maxPayload) bytes (--max-payload)")
        }
    }

    // MARK: PUT

    private func create(_ stream: StreamRequest, _ request: Request) async throws -> Response {
        let (name, headers) = (stream.name, stream.headers)
        var expiry = try headers.expiry()
        var contentType = headers.declaredContentType
        let closed = headers.closes
        let maxEvents = try headers.maxEvents()
        var fork = try headers.fork()
        if hubs[name] != nil, store.isExpired(name) { try? await store.delete(name) }
        if let existing = hubs[name]?.info {
            return try declared(existing, contentType: contentType, expiry: expiry, closed: closed, fork: fork, maxEvents: maxEvents)
        }
        if var request = fork {
            // A fork takes its source's content type and expiry unless it names its own (§4.2).
            guard let source = hubs[request.source]?.info, !store.isExpired(request.source) else {
                throw HTTPProblem.unknownStream("no stream named '\(request.source)' to fork")
            }
            if source.isSoftDeleted { throw HTTPProblem(StoreError.forkOfDeletedStream(request.source)) }
            if let given = headers.contentType, !RequestHeaders.sameMediaType(given, source.httpContentType) {
                throw HTTPProblem(.conflict, .contentTypeMismatch, "a fork keeps its source's content type, \(source.httpContentType)")
            }
            contentType = source.httpContentType
            expiry = expiry ?? source.config.expiry
            request.subOffsetCountsEvents = source.isJSON
            fork = request
        }
        let body = try await body(of: request)
        let payloads = try messages(body, json: RequestHeaders.sameMediaType(contentType, "application/json"), creating: true)
        // Kept whole unless the PUT or the daemon (`--http-capacity`) asks for a cap: a
        // Durable Streams client expects a stream to keep what it was given.
        let config = StreamConfig(
            capacity: maxEvents ?? settings.createdCapacity, contentType: contentType, expiry: expiry, eventTTL: try headers.eventTTL()?.seconds,
            compaction: try headers.compaction())
        var write = StreamWrite(stream: name, payloads: payloads, create: config, close: closed, fork: fork)
        write.traceParent = headers.traceParent
        write.key = try headers.key()
        write.ttl = try headers.ttl()
        // A scoped token's streams are recorded as its own, and counted against its cap.
        let principal = stream.principal
        if principal.grants != nil {
            write.creator = StreamCreator(name: principal.name, limit: principal.limits.over(settings.clientLimits).streams)
        }
        let outcome: StreamWriteOutcome
        do {
            outcome = try await store.write(write, tracer: tracer)
        } catch {
            if case .quotaExceeded = error {
                DaemonMetrics.streamQuotaRefusals.increment()
                logger.notice("http: denied 403: \(principal.name) asked to create '\(name)': \(error)")
            }
            throw HTTPProblem(error)
        }
        switch outcome {
        case .created(let info):
            var fields = HTTPFields()
            fields[.location] = location(of: request)
            fields[.contentType] = info.httpContentType
            fields[.streamNextOffset] = info.tailOffset
            info.addState(to: &fields)
            return Response(status: .created, headers: fields)
        case .existing(let info), .appended(let info), .alreadyClosed(let info), .duplicate(let info, _):
            return try declared(info, contentType: contentType, expiry: expiry, closed: closed, fork: fork, maxEvents: maxEvents)
        }
    }

    /// The stream's absolute URL, from the Host the client used.
    private func location(of request: Request) -> String {
        let host = request.head.authority ?? "\(settings.host):\(settings.port)"
        return "\(settings.scheme)://\(host)\(request.uri.path)"
    }

    /// A PUT of a stream that exists: `200 OK` if it declares the same settings (for a
    /// fork, the same source and fork point too); a deleted name stays taken while forks
    /// read from it.
    private func declared(
        _ info: StreamInfo, contentType: String, expiry: StreamExpiry?, closed: Bool, fork: ForkRequest?, maxEvents: Int?
    ) throws -> Response {
        if let maxEvents, maxEvents != info.config.capacity {
            throw HTTPProblem(
                .conflict, HTTPProblem.Code(.streamExists),
                "stream '\(info.name)' exists and keeps \(info.config.capacity.map { "\($0) events" } ?? "every event"), not \(maxEvents)")
        }
        var sameFork = true
        if let request = fork {
            if let existing = info.fork {
                sameFork =
                    existing.source == request.source && existing.requestedSubOffset == request.subOffset
                    && (request.sequence == nil || request.sequence == existing.requestedSequence)
            } else {
                sameFork = false
            }
        }
        guard !info.isSoftDeleted, sameFork, info.matches(contentType: contentType, expiry: fork == nil ? expiry : info.config.expiry, closed: closed) else {
            throw HTTPProblem(.conflict, HTTPProblem.Code(.streamExists), "stream '\(info.name)' exists with other settings (content type, expiry or closure)")
        }
        var fields = HTTPFields()
        fields[.contentType] = info.httpContentType
        fields[.streamNextOffset] = info.tailOffset
        info.addState(to: &fields)
        return Response(status: .ok, headers: fields)
    }

    /// A body's events: JSON mode splits an array into messages; otherwise the body is one.
    private func messages(_ body: Data, json: Bool, creating: Bool) throws -> [Data] {
        guard json else { return body.isEmpty ? [] : [body] }
        if body.isEmpty { return [] }
        do {
            return try JSONMessages.split(body, allowEmpty: creating)
        } catch .emptyArray {
            throw HTTPProblem.invalid("an empty JSON array appends nothing")
        } catch {
            throw HTTPProblem.invalid("the body is not valid JSON, which an application/json stream requires")
        }
    }

    // MARK: POST

    /// Only the two waits are async (the stream's hub, the body; then the write): the checks
    /// and the answer are plain functions. An async function's locals live in its task's
    /// frame, which the task allocates per call; with everything inline the frame was
    /// 8,672 bytes per POST.
    private func append(_ stream: StreamRequest, _ request: Request) async throws -> Response {
        let (name, headers) = (stream.name, stream.headers)
        if let due = try headers.due() { return try await schedule(stream, request, due: due) }
        let producer = try headers.producer()
        let info = try await hub(name).info
        let write = try appendWrite(name, headers: headers, producer: producer, body: try await body(of: request), info: info)
        let outcome: StreamWriteOutcome
        do {
            outcome = try await store.write(write, tracer: tracer)
        } catch {
            throw appendError(error, info: hubs[name]?.info ?? info)
        }
        return appended(outcome, producer: producer, storedNothing: write.payloads.isEmpty)
    }

    /// The write a POST asks for, or why it is refused.
    func appendWrite(_ name: String, headers: RequestHeaders, producer: ProducerStamp?, body: Data, info: StreamInfo) throws -> StreamWrite {
        let closes = headers.closes
        let key = try headers.key()
        // An empty body with a key is that key's tombstone: one empty event.
        if body.isEmpty, !closes, key == nil {
            throw HTTPProblem.invalid("an append needs a body (an empty one only with Stream-Closed: true, or with Replay-Key: a tombstone)")
        }
        if body.isEmpty, !closes, info.terminal != nil { throw appendError(.terminated(stream: name), info: info) }
        if !body.isEmpty {
            // A closed stream is said first, so the client sees Stream-Closed (§5.2).
            if info.terminal != nil, producer == nil { throw appendError(.terminated(stream: name), info: info) }
            guard let contentType = headers.contentType else {
                throw HTTPProblem.invalid("an append with a body needs a Content-Type")
            }
            if let declared = info.config.contentType, !RequestHeaders.sameMediaType(declared, contentType) {
                throw HTTPProblem(.conflict, .contentTypeMismatch, "stream '\(name)' holds \(declared), not \(RequestHeaders.mediaType(contentType))")
            }
        }
        let payloads = body.isEmpty && !closes ? [Data()] : try messages(body, json: info.isJSON, creating: false)
        var write = StreamWrite(stream: name, payloads: payloads, producer: producer, writerSequence: headers.writerSequence, close: closes)
        write.traceParent = headers.traceParent
        write.key = key
        write.ttl = try headers.ttl()
        return write
    }

    /// The answer to a POST that was written.
    func appended(_ outcome: StreamWriteOutcome, producer: ProducerStamp?, storedNothing: Bool) -> Response {
        var fields = HTTPFields()
        fields.reserveCapacity(Self.answerFields)
        addAppendedFields(outcome, producer: producer, to: &fields)
        return Response(status: Self.appendedStatus(outcome, producer: producer, storedNothing: storedNothing), headers: fields)
    }

    /// The status of a written POST's answer: 200 tells a producer its request was new; a
    /// close-only request stores nothing.
    static func appendedStatus(_ outcome: StreamWriteOutcome, producer: ProducerStamp?, storedNothing: Bool) -> HTTPResponse.Status {
        switch outcome {
        case .appended, .created: producer == nil || storedNothing ? .noContent : .ok
        case .alreadyClosed, .duplicate, .existing: .noContent
        }
    }

    /// A written POST's fields: where the stream's tail is now, its state, and a producer's
    /// highest pseq accepted for its epoch (a retry learns where it stands). Also what a door
    /// that writes its answers itself puts in them (`InlineAppends`).
    func addAppendedFields(_ outcome: StreamWriteOutcome, producer: ProducerStamp?, to fields: inout some AnswerFields) {
        let after: StreamInfo
        switch outcome {
        case .appended(let info), .created(let info), .alreadyClosed(let info), .duplicate(let info, _), .existing(let info):
            after = info
        }
        fields.setOffset(.streamNextOffset, after: after.lastSequence)
        after.addState(to: &fields)
        if let producer {
            fields.set(.producerEpoch, String(producer.epoch))
            fields.set(.producerSeq, String(outcome.producerSequence ?? producer.sequence))
        }
    }

    /// The most fields an append's answer carries: its offset, a producer's two, the
    /// stream's closure (two) and expiry, `Content-Length`, and the door's
    /// (`X-Content-Type-Options`, `Cross-Origin-Resource-Policy`, `Date`, CORS's three).
    /// A list made with room for them is not reallocated as the door adds its own (three
    /// times for every POST, grown one field at a time).
    static let answerFields = 13

    /// A refused append's answer, as the table gives it; a closed stream's also says where
    /// its tail is. (Also the answer of an inline POST, `InlineAppendHandler`.)
    func appendError(_ error: StoreError, name: String) -> HTTPProblem {
        guard let info = hubs[name]?.info else { return HTTPProblem(error) }
        return appendError(error, info: info)
    }

    private func appendError(_ error: StoreError, info: StreamInfo) -> HTTPProblem {
        var problem = HTTPProblem(error)
        if case .terminated = error {
            problem.headers[.streamNextOffset] = info.tailOffset
            info.addState(to: &problem.headers)
        }
        return problem
    }

    // MARK: DELETE and HEAD

    private func delete(_ name: String) async throws -> Response {
        _ = try await hub(name)
        try await withStoreErrors { () async throws(StoreError) in try await store.delete(name) }
        return Response(status: .noContent)
    }

    private func head(_ name: String) async throws -> Response {
        let info = try await hub(name).info
        var fields = HTTPFields()
        fields[.contentType] = info.httpContentType
        fields[.streamNextOffset] = info.tailOffset
        fields[.cacheControl] = "no-store"
        // The tag of a GET of the whole stream, from its first retained event to its tail
        // (the same `from:to[:c]` form), so that HEAD tells whether a cached copy is current.
        fields[.eTag] = Self.etag(info, from: info.firstSequence - 1, to: info.lastSequence, closed: info.terminal != nil)
        if let capacity = info.config.capacity { fields[.replayMaxEvents] = String(capacity) }
        if let ttl = info.config.eventTTL.flatMap(EventTTL.init(seconds:)) { fields[.replayEventTTL] = ttl.text }
        if let compaction = info.config.compaction {
            fields[.replayCompact] = "true"
            fields[.replayTombstoneRetention] = "\(compaction.tombstoneRetention)"
        }
        info.addState(to: &fields)
        return Response(status: .ok, headers: fields)
    }

    // MARK: Store errors

    /// Writes through the store's writer; a store error becomes its HTTP status.
    func write(_ write: StreamWrite) async throws -> StreamWriteOutcome {
        do {
            return try await store.write(write)
        } catch {
            throw HTTPProblem(error)
        }
    }

    func withStoreErrors<T>(_ body: () async throws(StoreError) -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw HTTPProblem(error)
        }
    }
}
