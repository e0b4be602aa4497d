import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// What every connection's `FirstRequestGate` shares: which first requests are SSE reads
/// it serves with no task (`ParkedEventStream`), and their answer's head.
///
/// Only the plain case is taken: a GET of a stream with `live=sse` that the router would
/// answer with 200 at once, on a door without token rules (`--auth-keys`) or client rates
/// (`--rate-limit-*`), which are the front door's to check and charge
/// (`FrontDoorResponder`), and with the daemon's own token where reads need it. Everything
/// else, refusals among it, goes on to hummingbird's router, unchanged.
final class ParkedEventStreams: Sendable {
    let endpoint: StreamEndpoint
    let settings: HTTPSettings
    let metrics: RequestMetrics?
    /// The readers due a step, by their connection's event loop (`ReaderTurns`).
    private let turns: [ObjectIdentifier: ReaderTurns]

    /// `loops`: the event loops the door's connections run on.
    init(endpoint: StreamEndpoint, settings: HTTPSettings, metrics: RequestMetrics?, loops: any EventLoopGroup) {
        self.endpoint = endpoint
        self.settings = settings
        self.metrics = metrics
        turns = Dictionary(uniqueKeysWithValues: loops.makeIterator().map { (ObjectIdentifier($0), ReaderTurns(loop: $0)) })
    }

    /// Whether this door serves any reader with no task: not where each request's token or
    /// rates must be checked by the front door.
    var isOn: Bool { settings.tokenKeys == nil && !settings.clientLimits.limitsRates }

    /// Takes `head` if it is an SSE read served here: writes the answer's head (not yet
    /// flushed: the first chunk flushes it) and returns the reader, not yet started.
    func open(_ head: HTTPRequest, context: ChannelHandlerContext) -> ParkedEventStream? {
        guard head.method == .get, let target = head.path, target.contains("live=sse") else { return nil }
        let fields = head.headerFields
        if let token = settings.token, settings.tokenForReads, RequestHeaders(fields: fields).bearerToken != token { return nil }
        let uri = URI(target)
        guard let stream = try? StreamRequest.at(uri.path, method: .get, fields: fields),
            let (answer, feed) = endpoint.parkedEventStream(stream.name, query: uri.queryParameters)
        else { return nil }
        let started = metrics?.start(.get)
        var headers = answer
        // The connection ends with the response: it has no task left to serve another.
        headers[.connection] = "close"
        FrontDoorResponder.addHeaders(to: &headers, origin: fields.value(.origin), settings: settings)
        headers[.date] = HTTPDate.now
        context.write(NIOAny(HTTPResponsePart.head(HTTPResponse(status: .ok, headerFields: headers))), promise: nil)
        var answered: (@Sendable () -> Void)?
        if let metrics, let started { answered = { metrics.answered(.ok, started, route: InlineAppends.route) } }
        return ParkedEventStream(
            feed: feed, channel: context.channel, parked: endpoint.parked,
            turns: turns[ObjectIdentifier(context.eventLoop)] ?? ReaderTurns(loop: context.eventLoop),
            lease: endpoint.leases.lease(stream.name), answered: answered)
    }
}
