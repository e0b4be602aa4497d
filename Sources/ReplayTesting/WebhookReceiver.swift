import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import ReplaySync

/// A real HTTP server on 127.0.0.1 for webhook tests: it records every POST (its body,
/// its headers, when it came) and answers each with the next of `answers` (the last one
/// again once they run out).
public final class WebhookReceiver: Sendable {
    public struct Delivery: Sendable {
        public let body: Data
        public let headers: [String: String]
        public let received: ContinuousClock.Instant

        public init(body: Data, headers: [String: String], received: ContinuousClock.Instant) {
            self.body = body
            self.headers = headers
            self.received = received
        }

        public var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:] }
    }

    public struct Answer: Sendable {
        public let status: Int
        public let body: String
        /// No answer at all: the request is recorded and the connection left open, as a
        /// receiver that hangs would (the delivery stays in flight until its sender gives up).
        public let withheld: Bool

        public init(status: Int = 200, body: String = "{}") {
            self.init(status: status, body: body, withheld: false)
        }

        private init(status: Int, body: String, withheld: Bool) {
            self.status = status
            self.body = body
            self.withheld = withheld
        }

        public static let withheld = Answer(status: 0, body: "", withheld: true)
    }

    public let port: Int
    private let channel: any Channel
    private let state: Locked<(deliveries: [Delivery], answers: [Answer])>

    public var url: String { "http://127.0.0.1:\(port)/hook" }
    public var deliveries: [Delivery] { state.withLock { $0.deliveries } }

    public init(answers: [Answer] = [Answer()]) async throws {
        let state = Locked<(deliveries: [Delivery], answers: [Answer])>(([], answers))
        self.state = state
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(Handler(state: state)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    /// From now on, answers with these (the last one again once they run out).
    public func answer(with answers: [Answer]) {
        state.withLock { $0.answers = answers }
    }

    /// Waits until `count` deliveries came (polling; for real processes, never for timing).
    public func waitFor(_ count: Int, within seconds: Double = 30) async throws -> [Delivery] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            let deliveries = self.deliveries
            if deliveries.count >= count { return deliveries }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("the webhook receiver got \(deliveries.count) deliveries, not \(count)")
    }

    public func close() async {
        try? await channel.close()
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let state: Locked<(deliveries: [Delivery], answers: [Answer])>
        var head: HTTPRequestHead?
        var body = Data()

        init(state: Locked<(deliveries: [Delivery], answers: [Answer])>) {
            self.state = state
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                self.head = head
                body = Data()
            case .body(let buffer):
                body.append(contentsOf: buffer.readableBytesView)
            case .end:
                let headers = Dictionary((head?.headers ?? [:]).map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
                let answer = state.withLock { state in
                    state.deliveries.append(Delivery(body: body, headers: headers, received: .now))
                    return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
                }
                guard !answer.withheld else { return }
                var fields = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", String(answer.body.utf8.count))])
                fields.add(name: "Connection", value: "close")
                let responseHead = HTTPResponseHead(version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status), headers: fields)
                context.write(wrapOutboundOut(.head(responseHead)), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: answer.body)))), promise: nil)
                // `Connection: close`: the daemon's client opens one connection per delivery.
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            }
        }
    }
}
