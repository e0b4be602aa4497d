import Foundation
import Logging
import ReplayModel
import ReplayStore

/// Wakes (a generation, a wake id, the snapshot of tails) and the workers that hold them:
/// a pull-wake worker's claim, acknowledgements and release, each fenced by generation.
extension Subscriptions {
    // MARK: Wakes

    /// Makes a wake if the subscription has none outstanding and has work. Memory is looked
    /// at first, so a commit to a stream whose subscriptions are busy costs nothing more.
    func wakeIfPending(_ id: String, triggeredBy: String?) async {
        guard let subscription = subscriptions[id], subscription.state.wakeID == nil, subscription.state.holder == nil,
            subscription.positions(in: store).contains(where: \.hasPending)
        else { return }
        do {
            try await exclusively { () async throws(HTTPProblem) in try await wake(id, triggeredBy: triggeredBy) }
        } catch {
            logger.error("subscription '\(id)': no wake was made: \(error)")
        }
    }

    /// Holding `exclusively`: a new generation and wake id, with the tails of now as its
    /// snapshot, if the subscription is still idle and has work; then the wake event
    /// (pull-wake) or the delivery (webhook), by the daemon whose write made the wake.
    func wake(_ id: String, triggeredBy: String?) async throws(HTTPProblem) {
        let trigger: String? = try await change(id) { subscription in
            guard subscription.state.wakeID == nil, subscription.state.holder == nil else { return nil }
            let positions = subscription.positions(in: store)
            guard let first = positions.first(where: \.hasPending) else { return nil }
            newWake(&subscription, positions)
            return triggeredBy ?? first.path
        }
        if let trigger, let made = subscriptions[id] { await announce(made, triggeredBy: trigger) }
    }

    func newWake(_ subscription: inout WakeSubscription, _ positions: [SubscriptionPosition]) {
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

    func announce(_ subscription: WakeSubscription, triggeredBy: String) async {
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
    func claim(_ id: String, worker: String) async throws(HTTPProblem) -> Claimed {
        try await exclusively { () async throws(HTTPProblem) -> Claimed in
            let made: String? = try await change(id) { subscription throws(HTTPProblem) in
                guard subscription.config.type == .pullWake else {
                    throw .invalid("subscription '\(id)' is a webhook subscription; only pull-wake ones are claimed")
                }
                if let holder = subscription.state.holder {
                    var problem = HTTPProblem(.conflict, .alreadyClaimed, "'\(holder)' holds this subscription's wake")
                    problem.currentHolder = holder
                    problem.generation = subscription.state.generation
                    throw problem
                }
                let positions = subscription.positions(in: store)
                guard let first = positions.first(where: \.hasPending) else {
                    throw HTTPProblem(.conflict, .noPendingWork, "subscription '\(id)' has no events past its positions")
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
            guard let current = subscriptions[id] else { throw .notFound(subscription: id) }
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
    func acknowledge(_ id: String, _ request: WakeRequest, kind: SubscriptionConfig.Kind) async throws(HTTPProblem) -> Bool {
        try await exclusively { () async throws(HTTPProblem) -> Bool in
            let generation = try await fence(id, request, kind: kind)
            try await apply(request.acks, to: id)
            // Fenced again as the state is written: another daemon may have ended the wake
            // meanwhile (the positions a stale worker moved are still ones it processed).
            let finished = try await change(id) { subscription throws(HTTPProblem) -> Bool in
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
    func release(_ id: String, _ request: WakeRequest) async throws(HTTPProblem) {
        try await exclusively { () async throws(HTTPProblem) in
            let generation = try await fence(id, request, kind: .pullWake)
            try await change(id) { subscription throws(HTTPProblem) in
                guard request.isCurrent(subscription.state, tokenGeneration: generation) else { throw .fenced }
                subscription.state.endWake()
            }
            try await wake(id, triggeredBy: nil)
        }
    }

    /// Refuses a token that is not this subscription's, and a wake that is not the current
    /// one; the token's generation.
    func fence(_ id: String, _ request: WakeRequest, kind: SubscriptionConfig.Kind) async throws(HTTPProblem) -> Int {
        let subscription = try await get(id)
        guard subscription.config.type == kind else { throw .invalid("subscription '\(id)' is not a \(kind.rawValue) subscription") }
        let generation = try await keys.verify(request.token, subscription: id)
        guard let current = subscriptions[id] else { throw .notFound(subscription: id) }
        guard request.isCurrent(current.state, tokenGeneration: generation) else {
            SubscriptionMetrics.fenced.increment()
            throw .fenced
        }
        return generation
    }

    /// Moves the positions acknowledged: all checked first, then each written.
    func apply(_ acks: [(stream: String, offset: String)], to id: String) async throws(HTTPProblem) {
        guard let subscription = subscriptions[id] else { throw .notFound(subscription: id) }
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

    func move(_ consumer: String, in stream: String, to sequence: UInt64) async throws(HTTPProblem) {
        // Opened at the stream's start if it is not yet (a stream created after the link).
        _ = try await run { done in store.openConsumer(consumer, of: stream, initialNext: { _ in 1 }, completion: done) }
        try await run { done in store.acknowledge(sequence, consumer: consumer, of: stream, completion: done) }
    }

    // MARK: Helpers

    func leaseEnd(_ subscription: WakeSubscription) -> Int64 {
        Timestamp.millis(Date()) + Int64(subscription.config.leaseTTLMillis)
    }

    func token(for subscription: WakeSubscription) async throws(HTTPProblem) -> String {
        do {
            return try await keys.token(subscription: subscription.id, generation: subscription.state.generation, validFor: 3_600)
        } catch {
            throw HTTPProblem.internal("the token could not be signed: \(error)")
        }
    }
}
