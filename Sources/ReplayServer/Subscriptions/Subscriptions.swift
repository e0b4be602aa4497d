import Foundation
import Logging
import ReplayModel
import ReplayStore

/// The Durable Streams subscriptions of this daemon (§6–7): each a durable cursor over the
/// streams its pattern matches and the streams it names, that wakes its workers when a
/// linked stream has events past the cursor. A wake has a generation; the one worker that
/// holds it (a pull-wake worker's claim, or the webhook receiver) acknowledges positions
/// with a token for that generation, and a stale generation is fenced.
///
/// One actor: every decision (a wake, a claim, a fence) is made in one step on the state
/// in memory, with no suspension between reading and changing it, then written through the
/// store's writer before it is answered. The positions themselves are durable consumers of
/// each stream (named `__ds/<id>`), so `replayctl consumers` shows them and retention and
/// PostgreSQL treat them as any consumer.
actor Subscriptions {
    let store: EventStore
    let keys: SigningKeys
    let webhooks: WebhookSender
    let logger: Logger
    /// The URL clients reach this door at: callback URLs and `jwks_url` are made from it.
    private(set) var baseURL: String
    private var subscriptions: [String: WakeSubscription] = [:]
    /// Each subscription's alarm: its lease's end or its next webhook attempt.
    private var alarms: [String: Task<Void, Never>] = [:]

    init(store: EventStore, keys: SigningKeys, webhooks: WebhookSender, baseURL: String, logger: Logger) throws {
        self.store = store
        self.keys = keys
        self.webhooks = webhooks
        self.baseURL = baseURL
        self.logger = logger
        let decoder = JSONDecoder()
        for row in try store.subscriptions() {
            guard let config = try? decoder.decode(SubscriptionConfig.self, from: Data(row.config.utf8)),
                let state = try? decoder.decode(SubscriptionState.self, from: Data(row.state.utf8))
            else {
                logger.error("subscription '\(row.id)': its row cannot be read; left as it is")
                continue
            }
            subscriptions[row.id] = WakeSubscription(id: row.id, config: config, state: state)
        }
        SubscriptionMetrics.subscriptions.set(subscriptions.count)
    }

    /// After a restart: alarms again, an interrupted delivery sent again, and a wake for
    /// work that arrived while the daemon was down.
    func resume(baseURL: String) async {
        self.baseURL = baseURL
        for id in subscriptions.keys.sorted() {
            guard let subscription = subscriptions[id] else { continue }
            if subscription.config.type == .webhook, subscription.state.wakeID != nil, subscription.state.leaseUntil == nil,
                subscription.state.nextAttempt == nil
            {
                deliverSoon(id)
            }
            schedule(id)
            await wakeIfPending(id, triggeredBy: nil)
        }
    }

    func stop() {
        for alarm in alarms.values { alarm.cancel() }
        alarms = [:]
    }

    // MARK: The control API

    /// PUT: creates the subscription (`true`), or confirms an identical one (`false`).
    func put(_ id: String, _ config: SubscriptionConfig) async throws(SubscriptionProblem) -> (WakeSubscription, created: Bool) {
        if let existing = subscriptions[id] {
            guard existing.config.hash == config.hash else {
                throw SubscriptionProblem(
                    status: .conflict, code: "SUBSCRIPTION_ALREADY_EXISTS",
                    message: "subscription '\(id)' exists with another configuration; DELETE it first to change it")
            }
            return (existing, false)
        }
        let subscription = WakeSubscription(
            id: id, config: config, state: SubscriptionState(createdAt: Timestamp.format(millis: Timestamp.millis(Date())), explicit: config.streams))
        // Streams that exist are linked at their tail: what they held before is not this
        // subscription's work. Streams created later start at their first event.
        for info in store.streams where subscription.links(info.name) {
            _ = try await run { done in
                store.openConsumer(subscription.consumerName, of: info.name, initialNext: { $0.lastSequence + 1 }, completion: done)
            }
        }
        guard subscriptions[id] == nil else { return (subscriptions[id]!, false) }
        subscriptions[id] = subscription
        SubscriptionMetrics.subscriptions.set(subscriptions.count)
        try await persist(id)
        return (subscription, true)
    }

    func get(_ id: String) throws(SubscriptionProblem) -> WakeSubscription {
        guard let subscription = subscriptions[id] else { throw .notFound(id) }
        return subscription
    }

    func delete(_ id: String) async throws(SubscriptionProblem) {
        guard let subscription = subscriptions.removeValue(forKey: id) else { throw .notFound(id) }
        alarms.removeValue(forKey: id)?.cancel()
        SubscriptionMetrics.subscriptions.set(subscriptions.count)
        try await run { done in store.write(subscription: id, nil, completion: done) }
        for stream in linkedStreams(subscription) where store.consumers(of: stream)?.contains(where: { $0.name == subscription.consumerName }) == true {
            _ = try? await run { done in store.deleteConsumer(subscription.consumerName, of: stream, completion: done) }
        }
    }

    /// POST …/streams: more explicit streams, each linked at its tail.
    func add(_ streams: [String], to id: String) async throws(SubscriptionProblem) {
        let subscription = try get(id)
        for stream in streams where !subscription.links(stream) && store.info(stream) != nil {
            _ = try await run { done in
                store.openConsumer(subscription.consumerName, of: stream, initialNext: { $0.lastSequence + 1 }, completion: done)
            }
        }
        guard subscriptions[id] != nil else { throw .notFound(id) }
        subscriptions[id]!.state.explicit = Array(Set(subscriptions[id]!.state.explicit).union(streams)).sorted()
        try await persist(id)
    }

    /// DELETE …/streams/<path>: no longer explicit (still linked if the pattern matches it).
    func remove(_ stream: String, from id: String) async throws(SubscriptionProblem) {
        _ = try get(id)
        subscriptions[id]!.state.explicit.removeAll { $0 == stream }
        let subscription = subscriptions[id]!
        try await persist(id)
        if !subscription.links(stream), store.consumers(of: stream)?.contains(where: { $0.name == subscription.consumerName }) == true {
            _ = try? await run { done in store.deleteConsumer(subscription.consumerName, of: stream, completion: done) }
        }
    }

    // MARK: What the streams tell

    /// A commit appended to `stream`: the subscriptions linking it wake, if idle.
    func appended(to stream: String) async {
        for (id, subscription) in subscriptions where subscription.links(stream) {
            await wakeIfPending(id, triggeredBy: stream)
        }
    }

    // MARK: Positions

    struct StreamPosition: Sendable {
        let path: String
        let explicit: Bool
        let acked: UInt64
        let tail: UInt64
        var hasPending: Bool { tail > acked }
    }

    /// The linked streams: the explicit ones (existing or not) and the existing ones the
    /// pattern matches.
    func linkedStreams(_ subscription: WakeSubscription) -> [String] {
        var names = Set(subscription.state.explicit)
        if subscription.pattern != nil {
            for info in store.streams where subscription.links(info.name) { names.insert(info.name) }
        }
        return names.sorted()
    }

    func positions(_ subscription: WakeSubscription) -> [StreamPosition] {
        linkedStreams(subscription).map { stream in
            let acked = store.consumers(of: stream)?.first { $0.name == subscription.consumerName }?.ackedSequence ?? 0
            return StreamPosition(
                path: stream, explicit: subscription.state.explicit.contains(stream), acked: acked, tail: store.info(stream)?.lastSequence ?? 0)
        }
    }

    // MARK: Wakes

    /// Makes a wake if the subscription has none outstanding and has work.
    private func wakeIfPending(_ id: String, triggeredBy: String?) async {
        guard let subscription = subscriptions[id], subscription.state.wakeID == nil, subscription.state.holder == nil else { return }
        let positions = positions(subscription)
        guard let first = positions.first(where: \.hasPending) else { return }
        await makeWake(id, positions: positions, triggeredBy: triggeredBy ?? first.path)
    }

    /// A new generation and wake id, with the tails of now as its snapshot; then the wake
    /// event (pull-wake) or the delivery (webhook).
    private func makeWake(_ id: String, positions: [StreamPosition], triggeredBy: String) async {
        guard var subscription = subscriptions[id] else { return }
        subscription.state.generation += 1
        subscription.state.wakeID = "w_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        subscription.state.snapshot = Dictionary(uniqueKeysWithValues: positions.map { ($0.path, $0.tail) })
        subscriptions[id] = subscription
        SubscriptionMetrics.wakes.increment()
        do { try await persist(id) } catch { logger.error("subscription '\(id)': its wake was not written: \(error.description)") }
        switch subscription.config.type {
        case .webhook:
            deliverSoon(id)
        case .pullWake:
            guard let wakeStream = subscription.config.wakeStream else { return }
            guard store.info(wakeStream) != nil else {
                logger.warning("subscription '\(id)': its wake stream '\(wakeStream)' does not exist; workers can still claim")
                return
            }
            let event: [String: Any] = [
                "type": "wake", "subscription_id": id, "stream": triggeredBy, "generation": subscription.state.generation,
                "wake_id": subscription.state.wakeID ?? "", "ts": Timestamp.millis(Date()),
            ]
            do {
                _ = try await store.append(SubscriptionJSON.data(event), to: wakeStream)
            } catch {
                logger.error("subscription '\(id)': the wake event was not appended to '\(wakeStream)': \(error.description)")
            }
        }
    }

    // MARK: Workers

    struct Claimed: Sendable {
        let subscription: WakeSubscription
        let token: String
        let positions: [StreamPosition]
    }

    /// A pull-wake worker takes the wake (made now if there is work and none is out).
    func claim(_ id: String, worker: String) async throws(SubscriptionProblem) -> Claimed {
        let subscription = try get(id)
        guard subscription.config.type == .pullWake else { throw .invalid("subscription '\(id)' is a webhook subscription; only pull-wake ones are claimed") }
        if let holder = subscription.state.holder {
            var problem = SubscriptionProblem(status: .conflict, code: "ALREADY_CLAIMED", message: "'\(holder)' holds this subscription's wake")
            problem.currentHolder = holder
            problem.generation = subscription.state.generation
            throw problem
        }
        let positions = positions(subscription)
        guard let first = positions.first(where: \.hasPending) else {
            throw SubscriptionProblem(status: .conflict, code: "NO_PENDING_WORK", message: "subscription '\(id)' has no events past its positions")
        }
        if subscription.state.wakeID == nil { await makeWake(id, positions: positions, triggeredBy: first.path) }
        guard subscriptions[id] != nil, subscriptions[id]!.state.holder == nil else { return try await claim(id, worker: worker) }
        SubscriptionMetrics.claims.increment()
        subscriptions[id]!.state.holder = worker
        subscriptions[id]!.state.leaseUntil = leaseEnd(subscriptions[id]!)
        let current = subscriptions[id]!
        schedule(id)
        try await persist(id)
        return Claimed(subscription: current, token: try await token(for: current), positions: self.positions(current))
    }

    /// The request of a worker (or a webhook receiver's callback) acting for a wake.
    struct WakeRequest: Sendable {
        let token: String
        let wakeID: String?
        let generation: Int?
        let acks: [(stream: String, offset: String)]
        let done: Bool
    }

    /// An ack (pull-wake) or a callback (webhook): the acknowledgements applied, the lease
    /// extended, and with `done` the wake finished; whether a next wake went out.
    func acknowledge(_ id: String, _ request: WakeRequest, kind: SubscriptionConfig.Kind) async throws(SubscriptionProblem) -> Bool {
        try await fence(id, request, kind: kind)
        try await apply(request.acks, to: id)
        guard subscriptions[id] != nil else { throw .notFound(id) }
        if request.done {
            return try await finish(id)
        }
        subscriptions[id]!.state.leaseUntil = leaseEnd(subscriptions[id]!)
        schedule(id)
        try await persist(id)
        return false
    }

    /// The worker gives the wake up without finishing it.
    func release(_ id: String, _ request: WakeRequest) async throws(SubscriptionProblem) {
        try await fence(id, request, kind: .pullWake)
        _ = try await finish(id)
    }

    /// The wake ends; a next one goes out at once if work is pending.
    private func finish(_ id: String) async throws(SubscriptionProblem) -> Bool {
        subscriptions[id]?.state.endWake()
        schedule(id)
        try await persist(id)
        await wakeIfPending(id, triggeredBy: nil)
        return subscriptions[id]?.state.wakeID != nil
    }

    /// Refuses a token that is not this subscription's, and a wake that is not the current one.
    private func fence(_ id: String, _ request: WakeRequest, kind: SubscriptionConfig.Kind) async throws(SubscriptionProblem) {
        let subscription = try get(id)
        guard subscription.config.type == kind else { throw .invalid("subscription '\(id)' is not a \(kind.rawValue) subscription") }
        let generation = try await keys.verify(request.token, subscription: id)
        guard let current = subscriptions[id] else { throw .notFound(id) }
        guard generation == current.state.generation, request.generation == current.state.generation, let wake = current.state.wakeID,
            request.wakeID == wake
        else {
            SubscriptionMetrics.fenced.increment()
            throw .fenced
        }
    }

    /// Moves the positions acknowledged: all checked first, then each written.
    private func apply(_ acks: [(stream: String, offset: String)], to id: String) async throws(SubscriptionProblem) {
        let subscription = try get(id)
        var moves: [(String, UInt64)] = []
        for ack in acks {
            let stream = SubscriptionConfig.normalized(ack.stream)
            guard subscription.links(stream), let info = store.info(stream) else {
                throw .invalidOffset("'\(stream.prefix(80))' is not a stream of this subscription")
            }
            guard case .after(let sequence) = StreamOffset.parse(Substring(ack.offset)) else {
                throw .invalidOffset("'\(ack.offset.prefix(40))' is not an offset of '\(stream)'; acknowledge a Stream-Next-Offset")
            }
            let acked = store.consumers(of: stream)?.first { $0.name == subscription.consumerName }?.ackedSequence ?? 0
            guard sequence >= acked else {
                throw .invalidOffset("offset \(ack.offset) is before '\(stream)''s acknowledged position; acknowledgements never go back")
            }
            guard sequence <= info.lastSequence else { throw .invalidOffset("offset \(ack.offset) is beyond the tail of '\(stream)'") }
            moves.append((stream, sequence))
        }
        for (stream, sequence) in moves {
            try await move(subscription.consumerName, in: stream, to: sequence)
        }
    }

    private func move(_ consumer: String, in stream: String, to sequence: UInt64) async throws(SubscriptionProblem) {
        // Opened at the stream's start if it is not yet (a stream created after the link).
        _ = try await run { done in store.openConsumer(consumer, of: stream, initialNext: { _ in 1 }, completion: done) }
        try await run { done in store.acknowledge(sequence, consumer: consumer, of: stream, completion: done) }
    }

    // MARK: Webhooks

    /// Sends the current wake to the webhook, off the actor; its outcome comes back here.
    private func deliverSoon(_ id: String) {
        Task { await self.deliver(id) }
    }

    private func deliver(_ id: String) async {
        guard let subscription = subscriptions[id], let url = subscription.config.webhookURL, let wakeID = subscription.state.wakeID else { return }
        let generation = subscription.state.generation
        let body: Data
        do {
            let token = try await token(for: subscription)
            body = SubscriptionJSON.data([
                "subscription_id": id, "wake_id": wakeID, "generation": generation,
                "streams": positions(subscription).map(Self.json), "callback_url": actionURL(id, "callback"), "callback_token": token,
            ])
        } catch {
            logger.error("subscription '\(id)': its delivery could not be made: \(error)")
            return
        }
        SubscriptionMetrics.webhookAttempts.increment()
        let started = ContinuousClock.now
        let outcome = await webhooks.deliver(body, to: url, signedBy: keys)
        let elapsed = (ContinuousClock.now - started).components
        SubscriptionMetrics.webhookDuration.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
        guard let current = subscriptions[id], current.state.wakeID == wakeID, current.state.generation == generation else { return }
        switch outcome {
        case .failed(let reason):
            SubscriptionMetrics.webhookFailures.increment()
            let retries = current.state.retries + 1
            let delay = SubscriptionState.backoffMillis(retries: retries, jitter: Double.random(in: -1...1))
            logger.notice("subscription '\(id)': webhook delivery \(retries) failed (\(reason)); next in \(delay) ms")
            subscriptions[id]!.state.retries = retries
            subscriptions[id]!.state.status = .failed
            subscriptions[id]!.state.nextAttempt = Timestamp.millis(Date()) + delay
        case .accepted(let done):
            subscriptions[id]!.state.retries = 0
            subscriptions[id]!.state.status = .active
            subscriptions[id]!.state.nextAttempt = nil
            if done {
                // `{"done": true}`: the receiver handled everything up to the snapshot.
                for (stream, tail) in current.state.snapshot.sorted(by: { $0.key < $1.key }) where store.info(stream) != nil {
                    do { try await move(subscription.consumerName, in: stream, to: tail) } catch {
                        logger.error("subscription '\(id)': '\(stream)' was not acknowledged: \(error.description)")
                    }
                }
                _ = try? await finish(id)
                return
            }
            subscriptions[id]!.state.leaseUntil = leaseEnd(subscriptions[id]!)
        }
        schedule(id)
        do { try await persist(id) } catch { logger.error("subscription '\(id)': not written: \(error.description)") }
    }

    // MARK: Alarms

    /// The subscription's one alarm, at its lease's end or its next attempt, whichever is first.
    private func schedule(_ id: String) {
        alarms.removeValue(forKey: id)?.cancel()
        guard let state = subscriptions[id]?.state, let due = [state.leaseUntil, state.nextAttempt].compactMap({ $0 }).min() else { return }
        let wait = max(0, due - Timestamp.millis(Date()))
        alarms[id] = Task {
            try? await Task.sleep(for: .milliseconds(wait))
            guard !Task.isCancelled else { return }
            await self.alarm(id)
        }
    }

    private func alarm(_ id: String) async {
        guard let state = subscriptions[id]?.state else { return }
        let now = Timestamp.millis(Date())
        if let lease = state.leaseUntil, lease <= now {
            logger.info("subscription '\(id)': the lease of generation \(state.generation) ran out")
            SubscriptionMetrics.leaseExpiries.increment()
            _ = try? await finish(id)
        } else if let next = state.nextAttempt, next <= now {
            subscriptions[id]!.state.nextAttempt = nil
            await deliver(id)
        } else {
            schedule(id)
        }
    }

    // MARK: Helpers

    private func leaseEnd(_ subscription: WakeSubscription) -> Int64 {
        Timestamp.millis(Date()) + Int64(subscription.config.leaseTTLMillis)
    }

    private func token(for subscription: WakeSubscription) async throws(SubscriptionProblem) -> String {
        do {
            return try await keys.token(subscription: subscription.id, generation: subscription.state.generation, validFor: 3_600)
        } catch {
            throw SubscriptionProblem(status: .internalServerError, code: "INTERNAL", message: "the token could not be signed: \(error)")
        }
    }

    func actionURL(_ id: String, _ action: String) -> String {
        "\(baseURL)\(SubscriptionRoutes.root)/subscriptions/\(id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? id)/\(action)"
    }

    var jwksURL: String { "\(baseURL)\(SubscriptionRoutes.root)/jwks.json" }

    static func json(_ position: StreamPosition) -> [String: Any] {
        [
            "path": position.path, "link_type": position.explicit ? "explicit" : "glob", "acked_offset": StreamOffset.text(after: position.acked),
            "tail_offset": StreamOffset.text(after: position.tail), "has_pending": position.hasPending,
        ]
    }

    /// The subscription as GET answers it.
    func body(of subscription: WakeSubscription) -> Data {
        SubscriptionJSON.data(json(subscription))
    }

    private func json(_ subscription: WakeSubscription) -> [String: Any] {
        var body: [String: Any] = [
            "id": subscription.id, "subscription_id": subscription.id, "type": subscription.config.type.rawValue,
            "streams": positions(subscription).map { position in
                ["path": position.path, "link_type": position.explicit ? "explicit" : "glob", "acked_offset": StreamOffset.text(after: position.acked)]
            },
            "lease_ttl_ms": subscription.config.leaseTTLMillis, "created_at": subscription.state.createdAt,
            "status": subscription.state.status.rawValue, "generation": subscription.state.generation,
        ]
        body["pattern"] = subscription.config.pattern
        body["wake_stream"] = subscription.config.wakeStream
        body["description"] = subscription.config.description
        body["holder"] = subscription.state.holder
        if subscription.state.retries > 0 || subscription.state.nextAttempt != nil {
            // A failing webhook's schedule: failures in a row, and when the next attempt is due.
            var retry: [String: Any] = ["failures": subscription.state.retries]
            retry["next_attempt_ms"] = subscription.state.nextAttempt
            body["retry"] = retry
        }
        if let url = subscription.config.webhookURL {
            body["webhook"] = ["url": url, "signing": ["alg": "ed25519", "kid": keys.kid, "jwks_url": jwksURL]]
        }
        return body
    }

    private func persist(_ id: String) async throws(SubscriptionProblem) {
        guard let subscription = subscriptions[id] else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let config = try? encoder.encode(subscription.config), let state = try? encoder.encode(subscription.state) else { return }
        let row = SubscriptionRow(id: id, config: String(decoding: config, as: UTF8.self), state: String(decoding: state, as: UTF8.self))
        try await run { done in store.write(subscription: id, row, completion: done) }
    }

    /// A store call, its failure in the protocol's words.
    private func run<T: Sendable>(_ start: (@escaping @Sendable (Result<T, StoreError>) -> Void) -> Void) async throws(SubscriptionProblem) -> T {
        let result = await withCheckedContinuation { continuation in start { continuation.resume(returning: $0) } }
        switch result {
        case .success(let value): return value
        case .failure(let error):
            throw SubscriptionProblem(status: .serviceUnavailable, code: "STORE_UNAVAILABLE", message: error.description)
        }
    }
}
