import DequeModule
import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol

/// One request written to the daemon: the bytes of one or more commands, one reply promise
/// per command, and the subscription (if a SUB) whose frames must be routed from now on.
struct ClientRequest: Sendable {
    var bytes: ByteBuffer
    var replies: [EventLoopPromise<ServerFrame>]
    var subscribe: (sid: String, feed: SubscriptionFeed)?
    /// After UNSUB: frames for this sid are dropped from now on.
    var forget: String?
}

/// Matches replies to requests in order (the daemon answers commands in order) and routes
/// subscription frames to their feeds by sid. Runs on the channel's event loop only.
final class ClientHandler: ChannelDuplexHandler {
    typealias InboundIn = ServerFrame
    typealias OutboundIn = ClientRequest
    typealias OutboundOut = ByteBuffer

    private var pending = Deque<EventLoopPromise<ServerFrame>>()
    private var subscriptions: [String: SubscriptionFeed] = [:]

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = unwrapOutboundIn(data)
        pending.append(contentsOf: request.replies)
        if let (sid, feed) = request.subscribe { subscriptions[sid] = feed }
        if let sid = request.forget { subscriptions.removeValue(forKey: sid)?.finish(.success(())) }
        context.write(wrapOutboundOut(request.bytes), promise: promise)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame {
        case .hello:
            break
        case .ok, .published, .publishedAll, .error, .pong, .info, .list:
            pending.popFirst()?.succeed(frame)
        case .event(let stream, let sid, let sequence, let time, let payload, let traceParent, let hash, let key):
            let event = ReplayEvent(
                stream: stream, sequence: sequence, time: time, payload: payload.readableData,
                traceParent: traceParent.flatMap { TraceParent($0) }, hash: hash.flatMap { EventHash(hex: $0) }, key: key.flatMap { EventKey($0) })
            subscriptions[sid]?.push(.event(event))
        case .gap(let stream, let sid, let from, let through):
            subscriptions[sid]?.push(.gap(stream: stream, from...through))
        case .completed(let stream, let sid, _):
            if let feed = subscriptions[sid], feed.spansStreams { return feed.push(.ended(stream: stream, failure: nil)) }
            subscriptions.removeValue(forKey: sid)?.finish(.success(()))
        case .subscriptionError(_, let sid, let error):
            subscriptions.removeValue(forKey: sid)?.finish(.failure(.server(error)))
        case .failed(let stream, let sid, _, let message):
            if let feed = subscriptions[sid], feed.spansStreams { return feed.push(.ended(stream: stream, failure: message)) }
            subscriptions.removeValue(forKey: sid)?.finish(.failure(.streamFailed(stream: stream, message: message)))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        failEverything()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failEverything()
        context.close(promise: nil)
    }

    private func failEverything() {
        while let promise = pending.popFirst() { promise.fail(ReplayClientError.disconnected) }
        for feed in subscriptions.values { feed.finish(.failure(.disconnected)) }
        subscriptions = [:]
    }
}
