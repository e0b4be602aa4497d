import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTPTypes
import ReplayModel
import ReplayProtocol
import ReplayStore

/// What every connection's `InlineAppendHandler` shares: which POSTs it takes, the write
/// each asks for (with `StreamEndpoint`'s own checks) and the answer to a written one.
///
/// A class, one per door: every connection holds a handler, an SSE reader's for as long as
/// it reads, and these settings copied into each were 632 bytes a connection.
final class InlineAppends: Sendable {
    /// The route the request figures name a POST to a stream by, as hummingbird's router does.
    static let route = StreamEndpoint.prefix + "**"

    let endpoint: StreamEndpoint
    let settings: HTTPSettings
    let metrics: RequestMetrics?
    /// The door's one table of client rates (`FrontDoorResponder` keeps it too).
    let limiter: ClientRateLimiter

    init(endpoint: StreamEndpoint, settings: HTTPSettings, metrics: RequestMetrics?, limiter: ClientRateLimiter) {
        self.endpoint = endpoint
        self.settings = settings
        self.metrics = metrics
        self.limiter = limiter
    }

    var maxPayload: Int { endpoint.maxPayload }
    var limitsRates: Bool { settings.clientLimits.limitsRates }

    /// A taken POST's write, with what its answer needs.
    struct Write {
        let write: StreamWrite
        let producer: ProducerStamp?
    }

    /// A POST taken here: the request to its stream and its announced length.
    struct Accepted {
        let stream: StreamRequest
        let length: Int
    }

    /// The POST's stream and length, if it is a POST taken here (see `InlineAppendHandler`).
    func accepts(_ head: HTTPRequest) -> Accepted? {
        guard head.method == .post, let path = head.path else { return nil }
        return accepts(post: path, fields: head.headerFields)
    }

    /// A POST to `path` with `fields`, if it is taken here.
    func accepts(post path: String, fields: HTTPFields) -> Accepted? {
        guard !path.utf8.contains(UInt8(ascii: "?")) else { return nil }
        // A scheduled POST goes to the router (`StreamEndpoint.schedule`).
        guard fields.value(.expect) == nil, fields.value(.replayDelay) == nil, fields.value(.replayAt) == nil,
            Self.closes(fields) || fields.value(.connection) == nil || fields.value(.connection)?.lowercased() == "keep-alive",
            let length = fields.value(.contentLength).flatMap({ Int($0) }), length <= maxPayload
        else { return nil }
        if let token = settings.token, RequestHeaders(fields: fields).bearerToken != token { return nil }
        // A name that is not one goes to the router, which refuses it.
        guard let stream = try? StreamRequest.at(path, method: .post, fields: fields) else { return nil }
        return Accepted(stream: stream, length: length)
    }

    /// Charges a POST of `bytes` to `client`'s rates if it is within them; else charges
    /// nothing (the router then refuses it, and counts and words the refusal).
    func charge(_ client: String, bytes: Int) -> Bool {
        limiter.takeIfWithin(client, limits: settings.clientLimits, bytes: bytes)
    }

    /// Gives back a charge: the POST goes on to the router, which charges it again.
    func refund(_ client: String, bytes: Int) {
        limiter.refund(client, bytes: bytes)
    }

    /// `Connection: close`: the connection ends with this request's answer.
    static func closes(_ fields: HTTPFields) -> Bool {
        fields.value(.connection)?.lowercased() == "close"
    }

    /// A taken POST, checked as `StreamEndpoint` checks any POST.
    enum Checked {
        /// The write it asks for.
        case write(Write)
        /// Why it is refused.
        case refused(HTTPProblem)
        /// Its stream is past its expiry: the router deletes it and answers.
        case expired
    }

    func write(_ stream: StreamRequest, body: ByteBuffer?) -> Checked {
        let (name, headers) = (stream.name, stream.headers)
        do {
            let producer = try headers.producer()
            guard let hub = try endpoint.liveHub(name) else { return .expired }
            let data = body.map(\.readableData) ?? Data()
            let write = try endpoint.appendWrite(name, headers: headers, producer: producer, body: data, info: hub.info)
            return .write(Write(write: write, producer: producer))
        } catch let problem as HTTPProblem {
            return .refused(problem)
        } catch {
            return .refused(.internal("\(error)"))
        }
    }

    /// An answer to a taken POST: its status, its fields with the door's own, and a body for
    /// a refusal.
    struct Answer {
        let status: HTTPResponse.Status
        let fields: HTTPFields
        let body: ByteBuffer?
    }

    /// The answer to a taken POST, written or refused, as the router would give it.
    /// - Parameter request: the POST's fields.
    func answer(_ answer: InlineAppendState.Answer, request: HTTPFields) -> Answer {
        switch answer {
        case .written(let write, let outcome): written(outcome, write, request: request)
        case .refused(let problem): refusal(problem, request: request)
        }
    }

    /// The answer to a taken POST, written or refused, as HTTP/1.1 bytes into `buffer` (a
    /// POST framed from the connection's bytes, `FramedAppendHandler`): its status. A written
    /// POST's fields go straight into the bytes, with no list of them made.
    func writeAnswer(_ answer: InlineAppendState.Answer, request: HTTPFields, into buffer: inout ByteBuffer) -> HTTPResponse.Status {
        switch answer {
        case .written(let write, let outcome):
            let status = writtenStatus(outcome, write)
            var fields = HTTP1AnswerBytes.Fields(status, in: consume buffer)
            addWrittenFields(outcome, write, request: request, to: &fields)
            buffer = fields.end()
            return status
        case .refused(let problem):
            let refusal = refusal(problem, request: request)
            HTTP1AnswerBytes.write(refusal.status, refusal.fields, body: refusal.body, into: &buffer)
            return refusal.status
        }
    }

    private func written(_ outcome: StreamWriteOutcome, _ write: Write, request: HTTPFields) -> Answer {
        var fields = HTTPFields()
        fields.reserveCapacity(StreamEndpoint.answerFields)
        addWrittenFields(outcome, write, request: request, to: &fields)
        return Answer(status: writtenStatus(outcome, write), fields: fields, body: nil)
    }

    private func writtenStatus(_ outcome: StreamWriteOutcome, _ write: Write) -> HTTPResponse.Status {
        StreamEndpoint.appendedStatus(outcome, producer: write.producer, storedNothing: write.write.payloads.isEmpty)
    }

    private func addWrittenFields(_ outcome: StreamWriteOutcome, _ write: Write, request: HTTPFields, to fields: inout some AnswerFields) {
        endpoint.addAppendedFields(outcome, producer: write.producer, to: &fields)
        // No body, as hummingbird's `Response` says for the router (a 200 without it would
        // be sent chunked).
        fields.set(.contentLength, "0")
        addDoorFields(to: &fields, request: request)
    }

    private func refusal(_ problem: HTTPProblem, request: HTTPFields) -> Answer {
        let body = ByteBuffer(bytes: problem.body)
        var fields = problem.headers
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        fields[.contentLength] = String(body.readableBytes)
        addDoorFields(to: &fields, request: request)
        return Answer(status: problem.status, fields: fields, body: body)
    }

    /// The door's fields, as `FrontDoorResponder` adds them to the router's answers, and `Date`.
    private func addDoorFields(to fields: inout some AnswerFields, request: HTTPFields) {
        FrontDoorResponder.addHeaders(to: &fields, origin: request.value(.origin), settings: settings)
        fields.set(.date, HTTPDate.now)
    }

    /// Writes `answer` as hummingbird's parts, through `context`.
    static func send(_ answer: Answer, closing: Bool, context: ChannelHandlerContext) {
        context.write(NIOAny(HTTPResponsePart.head(HTTPResponse(status: answer.status, headerFields: answer.fields))), promise: nil)
        if let body = answer.body { context.write(NIOAny(HTTPResponsePart.body(body)), promise: nil) }
        guard closing else {
            context.writeAndFlush(NIOAny(HTTPResponsePart.end(nil)), promise: nil)
            return
        }
        // As hummingbird does for `Connection: close`: no more requests on this connection.
        let channel = context.channel
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        context.writeAndFlush(NIOAny(HTTPResponsePart.end(nil)), promise: written)
    }
}
