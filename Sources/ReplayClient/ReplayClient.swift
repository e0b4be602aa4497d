import Foundation
import NIOCore
import NIOPosix
import ReplayModel
import ReplayProtocol
import Synchronization

/// A connection to `replayd`.
///
/// ```swift
/// let client = try await ReplayClient.connect()
/// let seq = try await client.publish("orders", #"{"id":1}"#)
/// print(seq)                                          // 1
/// for try await event in try await client.subscribe("orders") {
///     print(event.sequence, event.text ?? "")         // 1 {"id":1}
/// }
/// ```
///
/// Calls may be made from many tasks at once; they are pipelined on the one connection and
/// answered in order.
public final class ReplayClient: Sendable {
    public let socketPath: String
    private let channel: any Channel
    private let nextSid = Atomic<UInt64>(0)

    private init(socketPath: String, channel: any Channel) {
        self.socketPath = socketPath
        self.channel = channel
    }

    /// The socket `replayd` uses by default: `$REPLAY_SOCKET`, else
    /// `$XDG_RUNTIME_DIR/replayd.sock`, else `/tmp/replayd-$UID.sock`.
    public static var defaultSocketPath: String { ReplayDefaults.socketPath }

    /// Connects; throws `ReplayClientError.daemonNotRunning` if nothing listens there.
    public static func connect(to socketPath: String = defaultSocketPath) async throws -> ReplayClient {
        do {
            let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandlers([
                            ByteToMessageHandler(ServerFrameDecoder()), ClientHandler(),
                        ])
                    }
                }
                .connect(unixDomainSocketPath: socketPath)
                .get()
            return ReplayClient(socketPath: socketPath, channel: channel)
        } catch {
            throw ReplayClientError.daemonNotRunning(socketPath: socketPath, reason: Self.describe(error))
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError {
            return String(cString: strerror(error.errnoCode))
        }
        return "\(error)"
    }

    /// Closes the connection; subscriptions end with `disconnected`.
    public func close() async {
        try? await channel.close()
    }

    // MARK: Requests

    /// Sends commands in one write and returns their replies, in order.
    func send(_ commands: [ClientCommand], subscribe: (String, SubscriptionFeed)? = nil, forget: String? = nil) async throws -> [ServerFrame] {
        try await write(commands, subscribe: subscribe, forget: forget).get()
    }

    /// Hands the commands to the connection now, before returning, so that successive
    /// calls from one task reach the daemon in call order; the replies are awaited later.
    private func write(_ commands: [ClientCommand], subscribe: (String, SubscriptionFeed)? = nil, forget: String? = nil) -> EventLoopFuture<[ServerFrame]> {
        var bytes = channel.allocator.buffer(capacity: 64 * commands.count)
        for command in commands { command.write(into: &bytes) }
        let replies = commands.map { _ in channel.eventLoop.makePromise(of: ServerFrame.self) }
        let request = ClientRequest(bytes: bytes, replies: replies, subscribe: subscribe, forget: forget)
        channel.writeAndFlush(request).whenFailure { _ in
            for promise in replies { promise.fail(ReplayClientError.disconnected) }
        }
        return EventLoopFuture.whenAllSucceed(replies.map(\.futureResult), on: channel.eventLoop)
    }

    func expectOK(_ command: ClientCommand) async throws {
        let reply = try await send([command])[0]
        switch reply {
        case .ok: return
        case .error(let error): throw ReplayClientError.server(error)
        default: throw ReplayClientError.unexpectedReply("\(reply)")
        }
    }

    // MARK: Publishing

    /// Publishes one event; returns its sequence number once it is committed.
    @discardableResult
    public func publish(_ stream: String, _ payload: Data) async throws -> UInt64 {
        try await publish(stream, contentsOf: [payload])[0].get()
    }

    @discardableResult
    public func publish(_ stream: String, _ text: String) async throws -> UInt64 {
        try await publish(stream, Data(text.utf8))
    }

    /// Publishes one event only if the stream's last sequence number is `expect` (0: empty
    /// or new) when it commits; otherwise throws `.server` with code `wrong_last_seq`,
    /// whose message names the actual last sequence number, and nothing is stored.
    ///
    /// ```swift
    /// let seq = try await client.publish("account-7", #"{"deposited":10}"#, expect: 0)   // 1
    /// try await client.publish("account-7", #"{"withdrew":5}"#, expect: 0)               // throws wrong_last_seq
    /// ```
    @discardableResult
    public func publish(_ stream: String, _ payload: Data, expect: UInt64) async throws -> UInt64 {
        try await startPublishing(stream, contentsOf: [payload], checks: [AppendConditions(expectedLastSequence: expect)]).results[0].get()
    }

    @discardableResult
    public func publish(_ stream: String, _ text: String, expect: UInt64) async throws -> UInt64 {
        try await publish(stream, Data(text.utf8), expect: expect)
    }

    /// Publishes one event with its publisher's W3C trace context, which it keeps: every
    /// reader gets it with the event (`ReplayEvent.traceParent`) and continues the trace.
    ///
    /// ```swift
    /// let trace = TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    /// try await client.publish("orders", #"{"id":1}"#, traceParent: trace)
    /// ```
    @discardableResult
    public func publish(_ stream: String, _ payload: Data, traceParent: TraceParent?) async throws -> UInt64 {
        try await startPublishing(stream, contentsOf: [payload], checks: [AppendConditions(traceParent: traceParent)]).results[0].get()
    }

    @discardableResult
    public func publish(_ stream: String, _ text: String, traceParent: TraceParent?) async throws -> UInt64 {
        try await publish(stream, Data(text.utf8), traceParent: traceParent)
    }

    /// Publishes one event with its key: what the event is about (`customer-7`), kept with
    /// it and given back on every read (`ReplayEvent.key`); `latest(_:key:)` finds a key's
    /// newest event, and an empty payload is the key's tombstone.
    ///
    /// ```swift
    /// try await client.publish("customers", #"{"tier":"gold"}"#, key: EventKey("customer-7"))
    /// ```
    @discardableResult
    public func publish(_ stream: String, _ payload: Data, key: EventKey?) async throws -> UInt64 {
        try await startPublishing(stream, contentsOf: [payload], checks: [AppendConditions(key: key)]).results[0].get()
    }

    @discardableResult
    public func publish(_ stream: String, _ text: String, key: EventKey?) async throws -> UInt64 {
        try await publish(stream, Data(text.utf8), key: key)
    }

    /// Publishes one event that lives `ttl` (and, if given, with its key): once it expires
    /// no reader is given it (a reader that asked for it is told of a gap), and retention
    /// removes it.
    ///
    /// ```swift
    /// try await client.publish("sessions", #"{"user":"ada"}"#, ttl: EventTTL(seconds: 1_800)!)
    /// ```
    @discardableResult
    public func publish(_ stream: String, _ payload: Data, ttl: EventTTL, key: EventKey? = nil) async throws -> UInt64 {
        try await startPublishing(stream, contentsOf: [payload], checks: [AppendConditions(key: key, ttl: ttl)]).results[0].get()
    }

    @discardableResult
    public func publish(_ stream: String, _ text: String, ttl: EventTTL, key: EventKey? = nil) async throws -> UInt64 {
        try await publish(stream, Data(text.utf8), ttl: ttl, key: key)
    }

    /// Publishes many events in one pipelined write; one result per event, in order (an
    /// error for one does not stop the others).
    public func publish(_ stream: String, contentsOf payloads: [Data]) async throws -> [Result<UInt64, ReplayClientError>] {
        try await startPublishing(stream, contentsOf: payloads).results
    }

    /// Writes the events now and returns without waiting for their acknowledgements, so a
    /// producer can keep several batches in flight while staying in order: batches started
    /// one after the other from one task are stored in that order.
    ///
    /// `checks`, if given, has one entry per payload: an expected last sequence number and
    /// an idempotent producer's stamp (see `IdempotentProducer`).
    public func startPublishing(_ stream: String, contentsOf payloads: [Data], checks: [AppendConditions]? = nil) -> PublishBatch {
        let commands = payloads.indices.map { index in
            let payload = ByteBuffer(bytes: payloads[index])
            guard let checks, checks[index] != AppendConditions() else { return ClientCommand.publish(stream: stream, payload: payload) }
            return ClientCommand.publishChecked(stream: stream, payload: payload, checks: checks[index])
        }
        return PublishBatch(replies: write(commands))
    }

    /// Publishes `events`, to one stream or several, all or none: they commit together,
    /// contiguous in each stream, each checked against its `expect` (the stream's last
    /// sequence number before it, as the send's earlier events leave it). Returns each
    /// event's sequence number, in order; throws `.server` (for example `wrong_last_seq`)
    /// if any check fails, and then nothing is stored. No subscriber ever sees part of one.
    public func publishAtomically(_ events: [AtomicEvent]) async throws -> [UInt64] {
        let reply = try await send([.atomic(events)])[0]
        switch reply {
        case .published(let sequence): return [sequence]
        case .publishedAll(let sequences): return sequences
        case .error(let error): throw ReplayClientError.server(error)
        default: throw ReplayClientError.unexpectedReply("\(reply)")
        }
    }

    // MARK: Subscribing

    /// The flow-control window a subscription asks for unless told otherwise: about the
    /// feed's old high watermark, so a consumer that keeps up sees no difference.
    public static let defaultWindow = 1024

    /// Subscribes to `stream` from `start`; the result is an `AsyncSequence` of its events
    /// that ends when the stream completes and throws `streamFailed` when it fails. Gaps
    /// (history removed by retention) are reported to `onGap`.
    ///
    /// With `durable`, the subscription belongs to that named consumer of the stream: it
    /// starts right after the consumer's acknowledged position (from `start` on its first
    /// use), and `acknowledge(_:)` on it moves that position, durably.
    ///
    /// `window` is its flow control (`SUB … window=`): the daemon sends at most that many
    /// events the consumer has not taken, so a consumer that falls behind holds back only
    /// this subscription, never the connection's others. A daemon without windows is
    /// subscribed to without one (the connection then pauses for a slow consumer).
    public func subscribe(
        _ stream: String, from start: StartPosition = .all, durable consumer: String? = nil,
        window: Int = ReplayClient.defaultWindow, filter: String? = nil, hashes: Bool = false,
        onGap: (@Sendable (ClosedRange<UInt64>) -> Void)? = nil
    ) async throws -> ReplaySubscription {
        let plain: (String) -> ClientCommand = { sid in
            consumer.map { .subscribeDurable(stream: stream, sid: sid, start: start, consumer: $0) }
                ?? .subscribe(stream: stream, sid: sid, start: start)
        }
        // A read-time filter: each event through a jq program, on the daemon; with
        // `hashes`, each event's hash-chain link (`ReplayEvent.hash`).
        let filtered: (ClientCommand) -> ClientCommand = { command in
            let command = hashes ? .hashed(command) : command
            return filter.map { .filtered(command, program: $0) } ?? command
        }
        do {
            return try await subscribe(onGap: Self.ofOneStream(onGap), window: window) { sid in filtered(.windowed(plain(sid), window: window)) }
        } catch ReplayClientError.server(let error) where error.code == .badCommand && error.message.contains("window") {
            return try await subscribe(onGap: Self.ofOneStream(onGap), window: nil) { sid in filtered(plain(sid)) }
        }
    }

    /// Subscribes to every stream whose name matches `pattern` (`orders/*`, `orders/**`),
    /// those created later included: each from `start` (a stream created later, from its
    /// first event), each in order, streams interleaved. With `group`, as a member of the
    /// group of that name on every matching stream; acknowledge with
    /// `ReplaySubscription.acknowledge(_:)` given the event, which names its stream.
    ///
    /// A stream that completes or fails ends only its part: `onEnd` hears its name and its
    /// failure's message (`nil`: completed), and the subscription goes on until cancelled.
    /// With `hashes`, each event carries its hash-chain link (`ReplayEvent.hash`).
    public func subscribe(
        pattern: StreamPattern, from start: StartPosition = .all, group options: GroupOptions? = nil, hashes: Bool = false,
        onGap: (@Sendable (String, ClosedRange<UInt64>) -> Void)? = nil, onEnd: (@Sendable (String, String?) -> Void)? = nil
    ) async throws -> ReplaySubscription {
        try await subscribe(onGap: onGap, window: nil, spansStreams: true, onEnd: onEnd) { sid in
            let command: ClientCommand =
                options.map { .subscribePatternGroup(pattern: pattern, sid: sid, start: start, options: $0) }
                ?? .subscribePattern(pattern: pattern, sid: sid, start: start)
            return hashes ? .hashed(command) : command
        }
    }

    /// A one-stream subscription's gap callback, as the feed's (which names the stream).
    private static func ofOneStream(
        _ onGap: (@Sendable (ClosedRange<UInt64>) -> Void)?
    ) -> (@Sendable (String, ClosedRange<UInt64>) -> Void)? {
        guard let onGap else { return nil }
        return { @Sendable (_: String, range: ClosedRange<UInt64>) in onGap(range) }
    }

    /// Joins a consumer group of `stream` as a member (created at `start` on first use, with
    /// the settings `options` names): the result is an `AsyncSequence` of the events handed
    /// to this member. Acknowledge each with `acknowledge(_:)` (that one event) or give it
    /// back with `giveBack(_:delay:)`; what it holds unacknowledged when it ends goes to the
    /// group's other members. With `hashes`, each event carries its hash-chain link.
    public func subscribe(
        _ stream: String, from start: StartPosition = .all, group options: GroupOptions, hashes: Bool = false,
        onGap: (@Sendable (ClosedRange<UInt64>) -> Void)? = nil
    ) async throws -> ReplaySubscription {
        try await subscribe(onGap: Self.ofOneStream(onGap), window: nil) { sid in
            let command = ClientCommand.subscribeGroup(stream: stream, sid: sid, start: start, options: options)
            return hashes ? .hashed(command) : command
        }
    }

    private func subscribe(
        onGap: (@Sendable (String, ClosedRange<UInt64>) -> Void)?, window: Int?, spansStreams: Bool = false,
        onEnd: (@Sendable (String, String?) -> Void)? = nil, _ makeCommand: (String) -> ClientCommand
    ) async throws -> ReplaySubscription {
        let sid = "c\(nextSid.wrappingAdd(1, ordering: .relaxed).newValue)"
        let channel = self.channel
        let reading: @Sendable (Bool) -> Void = { channel.setOption(ChannelOptions.autoRead, value: $0).whenComplete { _ in } }
        let feed = SubscriptionFeed(windowed: window != nil, spansStreams: spansStreams, reading: reading) { [weak self] in
            guard let self else { return }
            Task { await self.unsubscribe(sid) }
        }
        let credit = window.map { window in
            WindowCredit(window: window) { [weak self] count in
                guard let self else { return }
                // Fire and forget: its +OK (or unknown_sid after an UNSUB) is not waited for.
                _ = self.write([.more(sid: sid, count: count)])
            }
        }
        let command = makeCommand(sid)
        let reply = try await send([command], subscribe: (sid, feed))[0]
        switch reply {
        case .ok: return ReplaySubscription(client: self, sid: sid, feed: feed, onGap: onGap, onEnd: onEnd, credit: credit)
        case .error(let error):
            feed.finish(.failure(.server(error)))
            throw ReplayClientError.server(error)
        default: throw ReplayClientError.unexpectedReply("\(reply)")
        }
    }

    func unsubscribe(_ sid: String) async {
        _ = try? await send([.unsubscribe(sid: sid)], forget: sid)
    }

    func acknowledge(_ sequence: UInt64, sid: String, stream: String? = nil) async throws {
        try await expectOK(.ack(sid: sid, sequence: sequence, stream: stream))
    }

    func giveBack(_ sequence: UInt64, delay: Double?, sid: String) async throws {
        try await expectOK(.nack(sid: sid, sequence: sequence, delay: delay))
    }

    // MARK: Administration

    /// Creates a stream (`capacity: nil` with `unlimited: true` keeps everything; both
    /// `nil` uses the daemon's default). Creating an identical stream again is fine.
    ///
    /// With a `source`, the daemon runs that shell command and its output becomes the
    /// stream's events; `connect` is `eager`, `lazy` (the default; `eager` for a source with
    /// a `schedule`) or `refcount`, and `sourceOptions` takes `SourceOptions`' words
    /// (`SourceOptions.Key`, or `options.words`).
    ///
    /// `compact` keeps each key's newest event (key compaction); a key's tombstone (a keyed
    /// event with an empty payload) then stays `tombstoneRetention` seconds (`nil`: a day).
    public func create(
        _ stream: String, capacity: Int? = nil, unlimited: Bool = false, maxBytes: Int? = nil, maxAge: Double? = nil,
        source: String? = nil, connect: String? = nil, sourceOptions: [String: String] = [:], keepUnacked: Int? = nil,
        eventTTL: EventTTL? = nil, compact: Bool = false, tombstoneRetention: Double? = nil
    ) async throws {
        let capacityOption: CreateOptions.Capacity? = unlimited ? .unlimited : capacity.map { .count($0) }
        try await expectOK(
            .create(
                stream: stream,
                options: CreateOptions(
                    capacity: capacityOption, maxBytes: maxBytes, maxAge: maxAge,
                    source: source, connect: source == nil ? nil : connect, sourceOptions: sourceOptions,
                    keepUnacked: keepUnacked, eventTTL: eventTTL?.seconds, compact: compact, tombstoneRetention: tombstoneRetention)))
    }

    public func delete(_ stream: String) async throws { try await expectOK(.delete(stream: stream)) }
    public func complete(_ stream: String) async throws { try await expectOK(.complete(stream: stream)) }
    public func fail(_ stream: String, message: String) async throws { try await expectOK(.fail(stream: stream, message: message)) }
    public func reset(_ stream: String, keepHistory: Bool) async throws { try await expectOK(.reset(stream: stream, keepHistory: keepHistory)) }

    public func ping() async throws {
        let reply = try await send([.ping])[0]
        guard reply == .pong else { throw ReplayClientError.unexpectedReply("\(reply)") }
    }

    public func info(_ stream: String) async throws -> StreamDescription {
        try await decode(try await send([.info(stream: stream)])[0])
    }

    /// The newest event of `key` in `stream`; `nil` when there is none or it is the key's
    /// tombstone (the server's `unknown_key`).
    public func latest(_ stream: String, key: EventKey) async throws -> KeyedValue? {
        do {
            return try await decode(try await send([.latest(stream: stream, key: key)])[0])
        } catch ReplayClientError.server(let error) where error.code == .unknownKey {
            return nil
        }
    }

    public func list() async throws -> [StreamDescription] {
        try await decode(try await send([.list])[0])
    }

    /// The stream's durable consumers, with their acknowledged positions and lag.
    public func consumers(_ stream: String) async throws -> [ConsumerDescription] {
        try await decode(try await send([.consumers(stream: stream)])[0])
    }

    public func deleteConsumer(_ name: String, of stream: String) async throws {
        try await expectOK(.deleteConsumer(stream: stream, name: name))
    }

    /// The Durable Streams subscriptions (made over HTTP): their wakes, leases, and
    /// positions in each linked stream.
    public func subscriptions() async throws -> [SubscriptionDescription] {
        try await decode(try await send([.subscriptions])[0])
    }

    /// The stream's consumer groups: members, pending and delivered counts, lag.
    public func groups(_ stream: String) async throws -> [GroupDescription] {
        try await decode(try await send([.groups(stream: stream)])[0])
    }

    /// A group's pending events: who holds each, and how many times it was handed out.
    public func pending(_ stream: String, group: String) async throws -> [PendingDescription] {
        try await decode(try await send([.pending(stream: stream, group: group)])[0])
    }

    /// Defines a derived stream: `spec` computed by the daemon from its inputs, exactly
    /// once, its outputs kept as `stream`'s events (created with `capacity`, `nil`: the
    /// daemon's default, if new). The same definition again changes nothing; a different
    /// one is refused unless `rebuild`, which recomputes it from the retained inputs.
    public func derive(_ stream: String, _ spec: DerivationSpec, capacity: CreateOptions.Capacity? = nil, rebuild: Bool = false) async throws {
        try await expectOK(.derive(stream: stream, definition: spec.json, options: DeriveOptions(capacity: capacity, rebuild: rebuild)))
    }

    /// Every derived stream: its inputs, lag, rate, errors and status.
    public func derivations() async throws -> [DerivationDescription] {
        try await decode(try await send([.derivations])[0])
    }

    /// Has the daemon copy its whole store, consistently and while it keeps serving, to a
    /// new file at `path` (absolute, on the daemon's host); answers what the copy holds.
    /// Only the daemon's own user or root may ask; a SQLite store only.
    public func backup(to path: String) async throws -> BackupDescription {
        try await decode(try await send([.backup(path: path)])[0])
    }

    /// Recomputes the hash chains of `streams` (names or patterns; every stream if empty)
    /// while the daemon serves: one report per stream, naming the first event that does
    /// not match, if any.
    public func verify(_ streams: [String] = [], through: UInt64? = nil) async throws -> [ChainReport] {
        try await decode(try await send([.verify(streams: streams, through: through)])[0])
    }

    public func deleteGroup(_ group: String, of stream: String) async throws {
        try await expectOK(.deleteGroup(stream: stream, group: group))
    }

    func decode<T: Decodable>(_ reply: ServerFrame) async throws -> T {
        switch reply {
        case .info(let json), .list(let json):
            return try JSONDecoder().decode(T.self, from: Data(json.readableBytesView))
        case .error(let error): throw ReplayClientError.server(error)
        default: throw ReplayClientError.unexpectedReply("\(reply)")
        }
    }
}

/// Events written to the daemon whose acknowledgements are still to come.
public struct PublishBatch: Sendable {
    fileprivate let replies: EventLoopFuture<[ServerFrame]>

    /// One result per event, in order, once every acknowledgement came.
    public var results: [Result<UInt64, ReplayClientError>] {
        get async throws {
            try await replies.get().map { reply in
                switch reply {
                case .published(let sequence): .success(sequence)
                case .error(let error): .failure(.server(error))
                default: .failure(.unexpectedReply("\(reply)"))
                }
            }
        }
    }
}
