import ArgumentParser
import Dispatch
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOPosix

/// The floor replay's HTTP appends stand on: the channel pipeline replay's HTTP door runs
/// (NIO's HTTP/1 codecs and the conversion to swift-http-types, as hummingbird's
/// `HTTP1Channel` installs them) answering every POST at once, with no store, no router and
/// no metrics. With `--answer hop`, each answer first crosses to one serial queue and back,
/// as a POST's write crosses to replay's writer thread and its completion comes back.
///
/// What replay spends per POST above this is its own (the store, the writer, the checks);
/// what this spends above `tools/http_ceiling.c --store none` is the language's and the
/// framework's. Serve, then drive it as docs/PERFORMANCE.md drives replayd:
///   .build/release/http-floor --port 18095 [--answer now|hop] [--threads 2]
///   wrk -t2 -c16 -d8s --latency -s ../tools/http_post.lua http://127.0.0.1:18095/v1/stream/bench
@main
struct HTTPFloor: ParsableCommand {
    enum Answer: String, ExpressibleByArgument {
        case now, hop
    }

    enum Parts: String, ExpressibleByArgument {
        case types, http1
    }

    @Option(help: "The loopback port to serve on.")
    var port = 18095

    @Option(help: "now: answer on the event loop; hop: cross to one serial queue and back first.")
    var answer = Answer.now

    @Option(
        help: "types: requests and answers as swift-http-types values, as replay's handlers see them; http1: NIO's HTTP/1 parts, unconverted."
    )
    var parts = Parts.types

    @Option(help: "Event loop threads (replayd runs one per core).")
    var threads = System.coreCount

    func run() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let writer = DispatchQueue(label: "http-floor.writer")
        let hop = answer == .hop
        let channel = try ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false)
                    switch parts {
                    case .types:
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandler(AnswerHandler(writer: hop ? writer : nil))
                    case .http1:
                        try channel.pipeline.syncOperations.addHandler(HTTP1AnswerHandler(writer: hop ? writer : nil))
                    }
                }
            }
            .bind(host: "127.0.0.1", port: port).wait()
        print("http-floor: 127.0.0.1:\(port), answer \(answer.rawValue), \(parts.rawValue) parts, \(threads) event loops")
        try channel.closeFuture.wait()
    }
}

/// Answers each request when its end arrives: a POST 204 with the next offset, as replay
/// answers an append; anything else 201 (the stream's PUT).
final class AnswerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private static let nextOffset = HTTPField.Name("Stream-Next-Offset")!

    private let writer: DispatchQueue?
    private var method = HTTPRequest.Method.get
    private var appended = 0

    init(writer: DispatchQueue?) {
        self.writer = writer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): method = head.method
        case .body: break
        case .end:
            guard method == .post else {
                return respond(HTTPResponse(status: .created, headerFields: [.contentLength: "0"]), context: context)
            }
            appended += 1
            let answer = HTTPResponse(
                status: .noContent, headerFields: [Self.nextOffset: "\(appended)_0"])
            guard let writer else { return respond(answer, context: context) }
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            writer.async {
                loop.execute { bound.value.0.respond(answer, context: bound.value.1) }
            }
        }
    }

    private func respond(_ answer: HTTPResponse, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(answer)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}

/// `AnswerHandler` on NIO's HTTP/1 parts: the same answers without the conversion to and
/// from swift-http-types (`--parts http1`), to weigh that conversion.
final class HTTP1AnswerHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let writer: DispatchQueue?
    private var method = HTTPMethod.GET
    private var appended = 0

    init(writer: DispatchQueue?) {
        self.writer = writer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): method = head.method
        case .body: break
        case .end:
            guard method == .POST else {
                return respond(HTTPResponseHead(version: .http1_1, status: .created, headers: ["Content-Length": "0"]), context: context)
            }
            appended += 1
            let answer = HTTPResponseHead(version: .http1_1, status: .noContent, headers: ["Stream-Next-Offset": "\(appended)_0"])
            guard let writer else { return respond(answer, context: context) }
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            writer.async {
                loop.execute { bound.value.0.respond(answer, context: bound.value.1) }
            }
        }
    }

    private func respond(_ answer: HTTPResponseHead, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(.head(answer)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
