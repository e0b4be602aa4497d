import Foundation
import Logging
import ReplayModel
import ReplayStore
import Tracing

/// Webhook deliveries and what came of them, and each subscription's one alarm (its lease's
/// end or its next delivery attempt).
extension Subscriptions {
    // MARK: Webhooks

    /// Sends the current wake to the webhook, off the actor; its outcome comes back here.
    func deliverSoon(_ id: String) {
        guard !stopping else { return }
        let number = nextDelivery
        nextDelivery += 1
        deliveries[number] = Task {
            await self.deliver(id)
            self.delivered(number)
        }
    }

    func delivered(_ number: Int) {
        deliveries[number] = nil
    }

    func deliver(_ id: String) async {
        guard let subscription = subscriptions[id], let url = subscription.config.webhookURL, let wakeID = subscription.state.wakeID else { return }
        let generation = subscription.state.generation
        let positions = subscription.positions(in: store)
        let body: Data
        do {
            let token = try await token(for: subscription)
            body = SubscriptionJSON.data([
                "subscription_id": id, "wake_id": wakeID, "generation": generation,
                "streams": positions.map(Self.json), "callback_url": actionURL(id, "callback"), "callback_token": token,
            ])
        } catch {
            logger.error("subscription '\(id)': its delivery could not be made: \(error)")
            return
        }
        // The work it wakes for continues its publisher's trace: the delivery carries the
        // trace context of the oldest pending event, stream by stream, that has one (the
        // context of its span, with tracing on).
        let pending = await pendingTrace(positions)
        let span = pending.flatMap { tracer.start(.webhook, stream: $0.stream, continuing: $0.traceParent) }
        span?.attributes["messaging.destination.subscription.name"] = id
        span?.attributes["url.full"] = url
        SubscriptionMetrics.webhookAttempts.increment()
        let started = ContinuousClock.now
        let outcome = await webhooks.deliver(body, to: url, signedBy: keys, traceParent: span.flatMap(tracer.traceParent(of:)) ?? pending?.traceParent)
        if case .failed(let reason) = outcome { span?.setStatus(SpanStatus(code: .error, message: reason)) }
        span?.end()
        let elapsed = (ContinuousClock.now - started).components
        SubscriptionMetrics.webhookDuration.recordNanoseconds(elapsed.seconds * 1_000_000_000 + elapsed.attoseconds / 1_000_000_000)
        do {
            try await exclusively { () async throws(HTTPProblem) in try await record(outcome, of: wakeID, generation, for: id) }
        } catch {
            logger.error("subscription '\(id)': the delivery's outcome was not written: \(error)")
        }
    }

    /// The first pending event of each stream with work, in order: the first of them with a
    /// trace context, and its stream. One indexed row per stream, on the read pool.
    func pendingTrace(_ positions: [SubscriptionPosition]) async -> (stream: String, traceParent: String)? {
        let pending = positions.filter(\.hasPending)
        guard !pending.isEmpty else { return nil }
        return try? await reads.run { [store] in
            for position in pending {
                guard let event = try? store.read(position.path, from: position.acked + 1, limit: 1).first else { continue }
                if let trace = event.traceParent { return (position.path, trace.text) }
            }
            return nil
        }
    }

    /// Holding `exclusively`: what came of a delivery of wake `wakeID`, if it is still the
    /// current one.
    func record(_ outcome: WebhookSender.Outcome, of wakeID: String, _ generation: Int, for id: String) async throws(HTTPProblem) {
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
    func schedule(_ id: String) {
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
    func alarm(_ id: String) async {
        do {
            try await exclusively { () async throws(HTTPProblem) in
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
}
