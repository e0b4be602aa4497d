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
/// `--parts http1` leaves out the conversion to swift-http-types, and `--parts raw` every
/// HTTP codec: what NIO's channel alone costs a request and its answer.
///
/// What replay spends per POST above this is its own (the store, the writer, the checks);
/// what this spends above `tools/http_ceiling.c --store none` is the language's and the
/// framework's. Serve, then drive it as docs/PERFORMANCE.md drives replayd:
///   .build/release/http-floor --port 18095 [--parts types|http1|raw] [--answer now|hop] [--threads 2]
///   wrk -t2 -c16 -d8s --latency -s ../tools/http_post.lua http://127.0.0.1:18095/v1/stream/bench
@main
struct HTTPFloor: ParsableCommand {
    enum Answer: String, ExpressibleByArgument {
        case now, hop
    }

    enum Parts: String, ExpressibleByArgument {
        case types, http1, raw
    }

    @Option(help: "The loopback port to serve on.")
    var port = 18095

    @Option(help: "now: answer on the event loop; hop: cross to one serial queue and back first.")
    var answer = Answer.now

    @Option(
        help:
            "types: requests and answers as swift-http-types values, as replay's handlers see them; http1: NIO's HTTP/1 parts, unconverted; raw: the connection's bytes, with no HTTP codec."
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
                    let pipeline = channel.pipeline.syncOperations
                    let writer = hop ? writer : nil
                    switch parts {
                    case .raw:
                        try pipeline.addHandler(RawAnswerHandler(writer: writer))
                    case .http1:
                        try pipeline.configureHTTPServerPipeline(
                            withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false)
                        try pipeline.addHandler(AnswerHandler<HTTP1Parts>(writer: writer))
                    case .types:
                        try pipeline.configureHTTPServerPipeline(
                            withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false)
                        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try pipeline.addHandler(AnswerHandler<TypedParts>(writer: writer))
                    }
                }
            }
            .bind(host: "127.0.0.1", port: port).wait()
        print("http-floor: 127.0.0.1:\(port), answer \(answer.rawValue), \(parts.rawValue) parts, \(threads) event loops")
        try channel.closeFuture.wait()
    }
}

/// Answers each request when its end arrives: a POST 204 with the next offset, as replay
/// answers an append; anything else 201 (the stream's PUT). `Parts` says which parts the
/// pipeline hands it: swift-http-types values (`TypedParts`) or NIO's HTTP/1 ones.
final class AnswerHandler<Parts: FloorParts>: ChannelInboundHandler {
    typealias InboundIn = Parts.Inbound
    typealias OutboundOut = Parts.Outbound

    private let writer: DispatchQueue?
    private var isPost = false
    private var appended = 0

    init(writer: DispatchQueue?) {
        self.writer = writer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if let isPost = Parts.isPost(part) { self.isPost = isPost }
        guard Parts.isEnd(part) else { return }
        guard isPost else { return respond(Parts.answer(offset: nil), context: context) }
        appended += 1
        let answer = Parts.answer(offset: "\(appended)_0")
        guard let writer else { return respond(answer, context: context) }
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context, answer), eventLoop: loop)
        writer.async {
            loop.execute { bound.value.0.respond(bound.value.2, context: bound.value.1) }
        }
    }

    private func respond(_ answer: [Parts.Outbound], context: ChannelHandlerContext) {
        for part in answer.dropLast() { context.write(wrapOutboundOut(part), promise: nil) }
        if let last = answer.last { context.writeAndFlush(wrapOutboundOut(last), promise: nil) }
    }
}

/// The parts of one kind of HTTP pipeline, as the floor reads and answers them.
protocol FloorParts: SendableMetatype {
    associatedtype Inbound
    associatedtype Outbound
    /// Whether the request is a POST, for a head; `nil` for any other part.
    static func isPost(_ part: Inbound) -> Bool?
    static func isEnd(_ part: Inbound) -> Bool
    /// A 204 with `Stream-Next-Offset: offset`, or a 201 when there is no offset.
    static func answer(offset: String?) -> [Outbound]
}

/// swift-http-types values, as replay's handlers see them (`--parts types`).
enum TypedParts: FloorParts {
    private static let nextOffset = HTTPField.Name("Stream-Next-Offset")!

    static func isPost(_ part: HTTPRequestPart) -> Bool? {
        if case .head(let head) = part { head.method == .post } else { nil }
    }

    static func isEnd(_ part: HTTPRequestPart) -> Bool {
        if case .end = part { true } else { false }
    }

    static func answer(offset: String?) -> [HTTPResponsePart] {
        let head =
            if let offset { HTTPResponse(status: .noContent, headerFields: [nextOffset: offset]) } else {
                HTTPResponse(status: .created, headerFields: [.contentLength: "0"])
            }
        return [.head(head), .end(nil)]
    }
}

/// NIO's HTTP/1 parts, without the conversion to and from swift-http-types (`--parts
/// http1`), to weigh that conversion.
enum HTTP1Parts: FloorParts {
    static func isPost(_ part: HTTPServerRequestPart) -> Bool? {
        if case .head(let head) = part { head.method == .POST } else { nil }
    }

    static func isEnd(_ part: HTTPServerRequestPart) -> Bool {
        if case .end = part { true } else { false }
    }

    static func answer(offset: String?) -> [HTTPServerResponsePart] {
        let head =
            if let offset { HTTPResponseHead(version: .http1_1, status: .noContent, headers: ["Stream-Next-Offset": offset]) } else {
                HTTPResponseHead(version: .http1_1, status: .created, headers: ["Content-Length": "0"])
            }
        return [.head(head), .end(nil)]
    }
}

/// The connection's bytes with no HTTP codec (`--parts raw`): the least NIO's channel does
/// to read a request and write its answer, as a server that parsed HTTP/1.1 by hand would.
/// It frames only what `wrk` sends here (a head, then `Content-Length` bytes of body), finds
/// the end of each head and its length, and writes each answer as one buffer; it is a
/// floor to measure beside the codecs, not a parser.
final class RawAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let writer: DispatchQueue?
    private var received: ByteBuffer?
    private var appended = 0

    init(writer: DispatchQueue?) {
        self.writer = writer
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if received == nil { received = bytes } else { received!.writeBuffer(&bytes) }
        while let request = nextRequest() {
            answer(isPost: request, context: context)
        }
    }

    /// Takes the next whole request off `received`: whether it is a POST, or `nil` until one
    /// has arrived whole.
    private func nextRequest() -> Bool? {
        guard var buffer = received else { return nil }
        let found = buffer.withUnsafeReadableBytes(Self.frame)
        guard let found, buffer.readableBytes >= found.headEnd + found.length else { return nil }
        let isPost = buffer.readableBytesView.starts(with: "POST ".utf8)
        buffer.moveReaderIndex(forwardBy: found.headEnd + found.length)
        received = buffer.readableBytes == 0 ? nil : buffer
        return isPost
    }

    private static let contentLength = Array("content-length:".utf8)

    /// The end of the head at the front of `bytes` and its `Content-Length`, once the head
    /// has arrived; by bytes, with no allocation, as a server in C would.
    private static func frame(_ bytes: UnsafeRawBufferPointer) -> (headEnd: Int, length: Int)? {
        let name = contentLength
        var length = 0
        var lineStart = 0
        var i = 0
        while i + 1 < bytes.count {
            guard bytes[i] == UInt8(ascii: "\r"), bytes[i + 1] == UInt8(ascii: "\n") else {
                i += 1
                continue
            }
            if i == lineStart { return (i + 2, length) }  // the empty line: the head's end
            if i - lineStart > name.count, (0..<name.count).allSatisfy({ bytes[lineStart + $0] | 0x20 == name[$0] | 0x20 }) {
                length = 0
                for byte in bytes[(lineStart + name.count)..<i] where byte != UInt8(ascii: " ") {
                    length = length * 10 + Int(byte &- UInt8(ascii: "0"))
                }
            }
            i += 2
            lineStart = i
        }
        return nil
    }

    private func answer(isPost: Bool, context: ChannelHandlerContext) {
        guard isPost else { return respond(nil, context: context) }
        appended += 1
        let offset = "\(appended)_0"
        guard let writer else { return respond(offset, context: context) }
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        writer.async {
            loop.execute { bound.value.0.respond(offset, context: bound.value.1) }
        }
    }

    /// A 204 with `Stream-Next-Offset: offset`, or a 201 when there is no offset, written as
    /// one buffer.
    private func respond(_ offset: String?, context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: 128)
        if let offset {
            buffer.writeStaticString("HTTP/1.1 204 No Content\r\nStream-Next-Offset: ")
            buffer.writeString(offset)
            buffer.writeStaticString("\r\n\r\n")
        } else {
            buffer.writeStaticString("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }
}
