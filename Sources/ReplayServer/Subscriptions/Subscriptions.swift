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
    let reads: ReadPool
    let keys: SigningKeys
    let webhooks: WebhookSender
    let logger: Logger
    /// Whether other daemons write the same rows (a shared PostgreSQL database): each
    /// decision then starts from the row as the database has it, and the list is read again
    /// every `reloadInterval` to learn of subscriptions made elsewhere.
    let shared: Bool
    static let reloadInterval: Duration = .seconds(1)
    /// The URL clients reach this door at: callback URLs and `jwks_url` are made from it.
    private(set) var baseURL: String
    private var subscriptions: [String: WakeSubscription] = [:]
    /// Each subscription's alarm: its lease's end or its next webhook attempt.
    private var alarms: [String: Task<Void, Never>] = [:]
    private var reloading: Task<Void, Never>?
    /// Webhook deliveries in flight, so that a stop can wait for their outcomes to be written.
    private var deliveries: [Int: Task<Void, Never>] = [:]
    private var nextDelivery = 0
    /// Set by `stop()`: a delivery that fails from now on was cut short by the shutdown (the
    /// receiver may well have it), not refused by its receiver.
    private var stopping = false
    /// One change at a time (`exclusively`): a change reads, decides, and writes with a
    /// suspension at the write, and another change of the same row must not decide on the
    /// state before that write is known to have won.
    private var changing = false
    private var waitingToChange: [CheckedContinuation<Void, Never>] = []

    init(store: EventStore, reads: ReadPool, keys: SigningKeys, webhooks: WebhookSender, baseURL: String, logger: Logger) async throws {
        self.store = store
        self.reads = reads
        self.keys = keys
        self.webhooks = webhooks
        self.baseURL = baseURL
        self.logger = logger
        shared = store.isShared
        for row in try await reads.run({ try store.subscriptions() }) {
            guard let subscription = WakeSubscription(row) else {
                logger.error("subscription '\(row.id)': its row cannot be read by this build; left as it is")
                continue
            }
            subscriptions[row.id] = subscription
        }
        SubscriptionMetrics.subscriptions.set(subscriptions.count)
    }

    /// After a restart: alarms again, an interrupted delivery sent again, and a wake for
    /// work that arrived while the daemon was down.
    func resume(baseURL: String) async {
        self.baseURL = baseURL
        for id in subscriptions.keys.sorted() {
            // A delivery in flight when the daemon stopped is due again at its watchdog time.
            schedule(id)
            await wakeIfPending(id, triggeredBy: nil)
        }
        if shared && reloading == nil {
            reloading = Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.reloadInterval)
                    await self?.reload()
                }
            }
        }
    }

    /// No more alarms. Deliveries in flight go on until the webhook client is shut down; then
    /// `finishDeliveries()` waits for their outcomes.
    func stop() {
        stopping = true
        for alarm in alarms.values { alarm.cancel() }
        alarms = [:]
        reloading?.cancel()
    }

    /// After the webhook client's shutdown: every delivery's outcome is written.
    func finishDeliveries() async {
        while let (_, delivery) = deliveries.first {
            await delivery.value
        }
    }

    /// Learns the subscriptions other daemons made, changed or removed.
    private func reload() async {
        guard let rows = try? await reads.run({ [store] in try store.subscriptions() }) else { return }
        let seen = Set(rows.map(\.id))
        // Adopted only: wakes follow commits and alarms. (This daemon's copy of the streams'
        // positions may lag the daemon that just wrote the row; deciding a wake on it here
        // could wake for work already done.)
        for row in rows where (subscriptions[row.id]?.revision ?? 0) < row.revision {
            guard let subscription = WakeSubscription(row) else { continue }
            subscriptions[row.id] = subscription
            schedule(row.id)
        }
        for id in subscriptions.keys where !seen.contains(id) && subscriptions[id]!.revision > 0 {
            subscriptions[id] = nil
            alarms.removeValue(forKey: id)?.cancel()
        }
        SubscriptionMetrics.subscriptions.set(subscriptions.count)
    }

    // MARK: Changes

    /// Runs `body` with no other change in progress.
    private func exclusively<T>(_ body: () async throws(SubscriptionProblem) -> T) async throws(SubscriptionProblem) -> T {
        while changing { await withCheckedContinuation { waitingToChange.append($0) } }
        changing = true
        defer {
            changing = false
            if !waitingToChange.isEmpty { waitingToChange.removeFirst().resume() }
        }
        return try await body()
    }

    /// Reads the row again where other daemons write it too.
    private func refresh(_ id: String) async throws(SubscriptionProblem) {
        guard shared else { return }
        let row: SubscriptionRow?
        do {
            row = try await reads.run { [store] in try store.subscription(id) }
        } catch {
            throw SubscriptionProblem(status: .serviceUnavailable, code: "STORE_UNAVAILABLE", message: "\(error)")
        }
        adopt(row, id: id)
    }

    /// The row as the database has it, in memory.
    private func adopt(_ row: SubscriptionRow?, id: String) {
        if let row, let subscription = WakeSubscription(row) {
            subscriptions[id] = subscription
        } else {
            subscriptions[id] = nil
            alarms.removeValue(forKey: id)?.cancel()
        }
        schedule(id)
    }

    /// The one way a subscription changes: `decide` on its current state (read again from
    /// the database where it is shared), then its row written if it is still as read. A
    /// write that lost to another daemon's decides again on what that one wrote. Callers
    /// hold `exclusively`.
    @discardableResult
    private func change<T>(_ id: String, _ decide: (inout WakeSubscription) throws(SubscriptionProblem) -> T) async throws(SubscriptionProblem) -> T {
        for _ in 0..<16 {
            try await refresh(id)
            guard var subscription = subscriptions[id] else { throw .notFound(id) }
            let result = try decide(&subscription)
            guard subscription.state != subscriptions[id]?.state else { return result }
            let write = SubscriptionWrite(id: id, contents: subscription.contents, expected: subscription.revision == 0 ? nil : subscription.revision)
            switch try await run({ done in store.write(write, completion: done) }) {
            case .written(let revision):
                subscription.revision = revision
                subscriptions[id] = subscription
                schedule(id)
                return result
            case .changed(let row):
                adopt(row, id: id)
            }
        }
        throw SubscriptionProblem(status: .serviceUnavailable, code: "BUSY", message: "subscription '\(id)' kept changing under this request; try again")
    }

    // MARK: The control API

    /// PUT: creates the subscription (`true`), or confirms an identical one (`false`).
    func put(_ id: String, _ config: SubscriptionConfig) async throws(SubscriptionProblem) -> (WakeSubscription, created: Bool) {
        try await exclusively { () async throws(SubscriptionProblem) -> (WakeSubscription, created: Bool) in
            try await refresh(id)
            if let existing = subscriptions[id] {
                guard existing.config.hash == config.hash else {
                    throw SubscriptionProblem(
                        status: .conflict, code: "SUBSCRIPTION_ALREADY_EXISTS",
                        message: "subscription '\(id)' exists with another configuration; DELETE it first to change it")
                }
                return (existing, false)
            }
            var subscription = WakeSubscription(
                id: id, config: config,
                state: SubscriptionState(createdAt: Timestamp.format(millis: Timestamp.millis(Date())), explicit: config.streams))
            // Streams that exist are linked at their tail: what they held before is not this
            // subscription's work. Streams created later start at their first event.
            for info in store.streams where subscription.links(info.name) {
                _ = try await run { done in
                    store.openConsumer(subscription.consumerName, of: info.name, initialNext: { $0.lastSequence + 1 }, completion: done)
                }
            }
            let write = SubscriptionWrite(id: id, contents: subscription.contents, expected: nil)
            switch try await run({ done in store.write(write, completion: done) }) {
            case .written(let revision):
                subscription.revision = revision
                subscriptions[id] = subscription
                SubscriptionMetrics.subscriptions.set(subscriptions.count)
                return (subscription, true)
            case .changed(let row):
                // Another daemon created it first: judged against that one.
                adopt(row, id: id)
                guard let existing = subscriptions[id], existing.config.hash == config.hash else {
                    throw SubscriptionProblem(
                        status: .conflict, code: "SUBSCRIPTION_ALREADY_EXISTS", message: "subscription '\(id)' exists with another configuration")
                }
                return (existing, false)
            }
        }
    }

    func get(_ id: String) async throws(SubscriptionProblem) -> WakeSubscription {
        try await refresh(id)
        guard let subscription = subscriptions[id] else { throw .notFound(id) }
        return subscription
    }

    func delete(_ id: String) async throws(SubscriptionProblem) {
        let removed = try await exclusively { () async throws(SubscriptionProblem) -> WakeSubscription in
            for _ in 0..<16 {
                try await refresh(id)
                guard let subscription = subscriptions[id] else { throw .notFound(id) }
                let write = SubscriptionWrite(id: id, contents: nil, expected: subscription.revision)
                switch try await run({ done in store.write(write, completion: done) }) {
                case .written:
                    subscriptions[id] = nil
                    alarms.removeValue(forKey: id)?.cancel()
                    SubscriptionMetrics.subscriptions.set(subscriptions.count)
                    return subscription
                case .changed(let row):
                    adopt(row, id: id)
                }
            }
            throw SubscriptionProblem(status: .serviceUnavailable, code: "BUSY", message: "subscription '\(id)' kept changing; try again")
        }
        for stream in removed.linkedStreams(in: store) where store.consumers(of: stream)?.contains(where: { $0.name == removed.consumerName }) == true {
            _ = try? await run { done in store.deleteConsumer(removed.consumerName, of: stream, completion: done) }
        }
    }

    /// POST …/streams: more explicit streams, each linked at its tail.
    func add(_ streams: [String], to id: String) async throws(SubscriptionProblem) {
        try await exclusively { () async throws(SubscriptionProblem) in
            let subscription = try await get(id)
            for stream in streams where !subscription.links(stream) && store.info(stream) != nil {
                _ = try await run { done in
                    store.openConsumer(subscription.consumerName, of: stream, initialNext: { $0.lastSequence + 1 }, completion: done)
                }
            }
            try await change(id) { subscription in
                subscription.state.explicit = Array(Set(subscription.state.explicit).union(streams)).sorted()
            }
        }
    }

    /// DELETE …/streams/<path>: no longer explicit (still linked if the pattern matches it).
    func remove(_ stream: String, from id: String) async throws(SubscriptionProblem) {
        let subscription = try await exclusively { () async throws(SubscriptionProblem) -> WakeSubscription in
            try await change(id) { subscription in
                subscription.state.explicit.removeAll { $0 == stream }
                return subscription
            }
        }
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

    // MARK: Wakes

    /// Makes a wake if the subscription has none outstanding and has work. Memory is looked
    /// at first, so a commit to a stream whose subscriptions are busy costs nothing more.
    private func wakeIfPending(_ id: String, triggeredBy: String?) async {
        guard let subscription = subscriptions[id], subscription.state.wakeID == nil, subscription.state.holder == nil,
            subscription.positions(in: store).contains(where: \.hasPending)
        else { return }
        do {
            try await exclusively { () async throws(SubscriptionProblem) in try await wake(id, triggeredBy: triggeredBy) }
        } catch {
            logger.error("subscription '\(id)': no wake was made: \(error)")
        }
    }

    /// Holding `exclusively`: a new generation and wake id, with the tails of now as its
    /// snapshot, if the subscription is still idle and has work; then the wake event
    /// (pull-wake) or the delivery (webhook), by the daemon whose write made the wake.
    private func wake(_ id: String, triggeredBy: String?) async throws(SubscriptionProblem) {
        let trigger: String? = try await change(id) { subscription in
            guard subscription.state.wakeID == nil, subscription.state.holder == nil else { return nil }
            let positions = subscription.positions(in: store)
            guard let first = positions.first(where: \.hasPending) else { return nil }
            newWake(&subscription, positions)
            return triggeredBy ?? first.path
        }
        if let trigger, let made = subscriptions[id] { await announce(made, triggeredBy: trigger) }
    }

    private func newWake(_ subscription: inout WakeSubscription, _ positions: [SubscriptionPosition]) {
        subscription.state.generation += 1
        subscription.state.wakeID = "w_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        subscription.state.snapshot = Dictionary(uniqueKeysWithValues: positions.map { ($0.path, $0.tail) })
        if subscription.config.type == .webhook {
            // The delivery is in flight: if this daemon dies before its outcome is written,
            // another (or this one restarted) delivers again then.
            subscription.state.nextAttempt = Timestamp.millis(Date()) + Self.deliveryWatchdogMillis
        }
    }

    /// Longer than a delivery's timeout (`WebhookSender`).
    static let deliveryWatchdogMillis: Int64 = 30_000

    private func announce(_ subscription: WakeSubscription, triggeredBy: String) async {
        SubscriptionMetrics.wakes.increment()
        let id = subscription.id
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
        let positions: [SubscriptionPosition]
    }

    /// A pull-wake worker takes the wake (made now if there is work and none is out).
    func claim(_ id: String, worker: String) async throws(SubscriptionProblem) -> Claimed {
        try await exclusively { () async throws(SubscriptionProblem) -> Claimed in
            let made: String? = try await change(id) { subscription throws(SubscriptionProblem) in
                guard subscription.config.type == .pullWake else {
                    throw .invalid("subscription '\(id)' is a webhook subscription; only pull-wake ones are claimed")
                }
                if let holder = subscription.state.holder {
                    var problem = SubscriptionProblem(status: .conflict, code: "ALREADY_CLAIMED", message: "'\(holder)' holds this subscription's wake")
                    problem.currentHolder = holder
                    problem.generation = subscription.state.generation
                    throw problem
                }
                let positions = subscription.positions(in: store)
                guard let first = positions.first(where: \.hasPending) else {
                    throw SubscriptionProblem(status: .conflict, code: "NO_PENDING_WORK", message: "subscription '\(id)' has no events past its positions")
                }
                var made: String?
                if subscription.state.wakeID == nil {
                    newWake(&subscription, positions)
                    made = first.path
                }
                subscription.state.holder = worker
                subscription.state.leaseUntil = leaseEnd(subscription)
                return made
            }
            SubscriptionMetrics.claims.increment()
            guard let current = subscriptions[id] else { throw .notFound(id) }
            if let made { await announce(current, triggeredBy: made) }
            return Claimed(subscription: current, token: try await token(for: current), positions: current.positions(in: store))
        }
    }

    /// The request of a worker (or a webhook receiver's callback) acting for a wake.
    struct WakeRequest: Sendable {
        let token: String
        let wakeID: String?
        let generation: Int?
        let acks: [(stream: String, offset: String)]
        let done: Bool

        /// Whether it acts for the subscription's current wake, with a token of `generation`.
        func isCurrent(_ state: SubscriptionState, tokenGeneration: Int) -> Bool {
            tokenGeneration == state.generation && generation == state.generation && state.wakeID != nil && wakeID == state.wakeID
        }
    }

    /// An ack (pull-wake) or a callback (webhook): the acknowledgements applied, the lease
    /// extended, and with `done` the wake finished; whether a next wake went out.
    func acknowledge(_ id: String, _ request: WakeRequest, kind: SubscriptionConfig.Kind) async throws(SubscriptionProblem) -> Bool {
        try await exclusively { () async throws(SubscriptionProblem) -> Bool in
            let generation = try await fence(id, request, kind: kind)
            try await apply(request.acks, to: id)
            // Fenced again as the state is written: another daemon may have ended the wake
            // meanwhile (the positions a stale worker moved are still ones it processed).
            let finished = try await change(id) { subscription throws(SubscriptionProblem) -> Bool in
                guard request.isCurrent(subscription.state, tokenGeneration: generation) else { throw .fenced }
                if request.done {
                    subscription.state.endWake()
                    return true
                }
                subscription.state.leaseUntil = leaseEnd(subscription)
                return false
            }
            guard finished else { return false }
            try await wake(id, triggeredBy: nil)
            return subscriptions[id]?.state.wakeID != nil
        }
    }

    /// The worker gives the wake up without finishing it.
    func release(_ id: String, _ request: WakeRequest) async throws(SubscriptionProblem) {
        try await exclusively { () async throws(SubscriptionProblem) in
            let generation = try await fence(id, request, kind: .pullWake)
            try await change(id) { subscription throws(SubscriptionProblem) in
                guard request.isCurrent(subscription.state, tokenGeneration: generation) else { throw .fenced }
                subscription.state.endWake()
            }
            try await wake(id, triggeredBy: nil)
        }
    }

    /// Refuses a token that is not this subscription's, and a wake that is not the current
    /// one; the token's generation.
    private func fence(_ id: String, _ request: WakeRequest, kind: SubscriptionConfig.Kind) async throws(SubscriptionProblem) -> Int {
        let subscription = try await get(id)
        guard subscription.config.type == kind else { throw .invalid("subscription '\(id)' is not a \(kind.rawValue) subscription") }
        let generation = try await keys.verify(request.token, subscription: id)
        guard let current = subscriptions[id] else { throw .notFound(id) }
        guard request.isCurrent(current.state, tokenGeneration: generation) else {
            SubscriptionMetrics.fenced.increment()
            throw .fenced
        }
        return generation
    }

    /// Moves the positions acknowledged: all checked first, then each written.
    private func apply(_ acks: [(stream: String, offset: String)], to id: String) async throws(SubscriptionProblem) {
        guard let subscription = subscriptions[id] else { throw .notFound(id) }
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
        guard !stopping else { return }
        let number = nextDelivery
        nextDelivery += 1
        deliveries[number] = Task {
            await self.deliver(id)
            self.delivered(number)
        }
    }

    private func delivered(_ number: Int) {
        deliveries[number] = nil
    }

    private func deliver(_ id: String) async {
        guard let subscription = subscriptions[id], let url = subscription.config.webhookURL, let wakeID = subscription.state.wakeID else { return }
        let generation = subscription.state.generation
        let body: Data
        do {
            let token = try await token(for: subscription)
            body = SubscriptionJSON.data([
                "subscription_id": id, "wake_id": wakeID, "generation": generation,
                "streams": subscription.positions(in: store).map(Self.json), "callback_url": actionURL(id, "callback"), "callback_token": token,
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
        do {
            try await exclusively { () async throws(SubscriptionProblem) in try await record(outcome, of: wakeID, generation, for: id) }
        } catch {
            logger.error("subscription '\(id)': the delivery's outcome was not written: \(error)")
        }
    }

    /// Holding `exclusively`: what came of a delivery of wake `wakeID`, if it is still the
    /// current one.
    private func record(_ outcome: WebhookSender.Outcome, of wakeID: String, _ generation: Int, for id: String) async throws(SubscriptionProblem) {
        let done: [String: UInt64]? = try await change(id) { subscription in
            guard subscription.state.wakeID == wakeID, subscription.state.generation == generation else { return nil }
            switch outcome {
            case .failed(let reason) where stopping:
                // Cut short by the shutdown: not the receiver's failure. Due again at once,
                // at the next start (or by another daemon sharing the database).
                logger.info("subscription '\(id)': webhook delivery interrupted by the shutdown (\(reason)); due again at the next start")
                subscription.state.nextAttempt = Timestamp.millis(Date())
                return nil
            case .failed(let reason):
                SubscriptionMetrics.webhookFailures.increment()
                subscription.state.retries += 1
                let delay = SubscriptionState.backoffMillis(retries: subscription.state.retries, jitter: Double.random(in: -1...1))
                logger.notice("subscription '\(id)': webhook delivery \(subscription.state.retries) failed (\(reason)); next in \(delay) ms")
                subscription.state.status = .failed
                subscription.state.nextAttempt = Timestamp.millis(Date()) + delay
                return nil
            case .accepted(let done):
                subscription.state.retries = 0
                subscription.state.status = .active
                subscription.state.nextAttempt = nil
                // A receiver that keeps the wake has the lease; one that says done, none.
                if !done { subscription.state.leaseUntil = leaseEnd(subscription) }
                return done ? subscription.state.snapshot : nil
            }
        }
        guard let snapshot = done, let subscription = subscriptions[id] else { return }
        // `{"done": true}`: the receiver handled everything up to the snapshot.
        for (stream, tail) in snapshot.sorted(by: { $0.key < $1.key }) where store.info(stream) != nil {
            try await move(subscription.consumerName, in: stream, to: tail)
        }
        try await change(id) { subscription in
            if subscription.state.wakeID == wakeID { subscription.state.endWake() }
        }
        try await wake(id, triggeredBy: nil)
    }

    // MARK: Alarms

    /// The subscription's one alarm, at its lease's end or its next attempt, whichever is
    /// first; none once stopping (a shutdown's own writes must not start deliveries).
    private func schedule(_ id: String) {
        alarms.removeValue(forKey: id)?.cancel()
        guard !stopping, let state = subscriptions[id]?.state, let due = [state.leaseUntil, state.nextAttempt].compactMap({ $0 }).min() else { return }
        let wait = max(0, due - Timestamp.millis(Date()))
        alarms[id] = Task {
            try? await Task.sleep(for: .milliseconds(wait))
            guard !Task.isCancelled else { return }
            await self.alarm(id)
        }
    }

    /// A lease ran out (the wake ends, and the next goes out if work is pending), or a
    /// delivery is due: taken by writing that it is in flight, so that of several daemons
    /// one delivers.
    private func alarm(_ id: String) async {
        do {
            try await exclusively { () async throws(SubscriptionProblem) in
                let now = Timestamp.millis(Date())
                enum Due { case leaseEnded, delivery, nothing }
                let due: Due = try await change(id) { subscription in
                    if let lease = subscription.state.leaseUntil, lease <= now {
                        logger.info("subscription '\(id)': the lease of generation \(subscription.state.generation) ran out")
                        subscription.state.endWake()
                        return .leaseEnded
                    }
                    if let next = subscription.state.nextAttempt, next <= now, subscription.state.wakeID != nil {
                        subscription.state.nextAttempt = now + Self.deliveryWatchdogMillis
                        return .delivery
                    }
                    return .nothing
                }
                switch due {
                case .leaseEnded:
                    SubscriptionMetrics.leaseExpiries.increment()
                    try await wake(id, triggeredBy: nil)
                case .delivery:
                    deliverSoon(id)
                case .nothing:
                    schedule(id)
                }
            }
        } catch {
            logger.error("subscription '\(id)': its alarm failed: \(error); tried again in a second")
            alarms[id] = Task {
                try? await Task.sleep(for: .seconds(1))
                guard !Task.isCancelled else { return }
                await self.alarm(id)
            }
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

    static func json(_ position: SubscriptionPosition) -> [String: Any] {
        [
            "path": position.path, "link_type": position.explicit ? "explicit" : "glob", "acked_offset": StreamOffset.text(after: position.acked),
            "tail_offset": StreamOffset.text(after: position.tail), "has_pending": position.hasPending,
        ]
    }

    /// Every subscription, as GET of each answers it, by id.
    func list() -> Data {
        SubscriptionJSON.data(subscriptions.keys.sorted().compactMap { subscriptions[$0] }.map(json))
    }

    /// The subscription as GET answers it.
    func body(of subscription: WakeSubscription) -> Data {
        SubscriptionJSON.data(json(subscription))
    }

    private func json(_ subscription: WakeSubscription) -> [String: Any] {
        var body: [String: Any] = [
            "id": subscription.id, "subscription_id": subscription.id, "type": subscription.config.type.rawValue,
            "streams": subscription.positions(in: store).map { position in
                [
                    "path": position.path, "link_type": position.explicit ? "explicit" : "glob",
                    "acked_offset": StreamOffset.text(after: position.acked), "lag": position.tail - min(position.tail, position.acked),
                ]
            },
            "lease_ttl_ms": subscription.config.leaseTTLMillis, "created_at": subscription.state.createdAt,
            "status": subscription.state.status.rawValue, "generation": subscription.state.generation,
        ]
        body["pattern"] = subscription.config.pattern
        body["wake_stream"] = subscription.config.wakeStream
        body["description"] = subscription.config.description
        body["holder"] = subscription.state.holder
        if subscription.state.retries > 0 {
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
