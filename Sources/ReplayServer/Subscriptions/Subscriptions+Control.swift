import Foundation
import Logging
import ReplayModel
import ReplayStore

/// The control API (PUT, GET, DELETE of a subscription; its explicit streams), and what
/// a commit tells the subscriptions that link its stream.
extension Subscriptions {
    // MARK: The control API

    /// PUT: creates the subscription (`true`), or confirms an identical one (`false`).
    func put(_ id: String, _ config: SubscriptionConfig) async throws(HTTPProblem) -> (WakeSubscription, created: Bool) {
        creating += 1
        defer { creating -= 1 }
        let made = try await exclusively { () async throws(HTTPProblem) -> (WakeSubscription, created: Bool) in
            try await refresh(id)
            if let existing = subscriptions[id] {
                guard existing.config.hash == config.hash else {
                    throw HTTPProblem(.conflict, .subscriptionExists, "subscription '\(id)' exists with another configuration; DELETE it first to change it")
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
                return (subscription, true)
            case .changed(let row):
                // Another daemon created it first: judged against that one.
                adopt(row, id: id)
                guard let existing = subscriptions[id], existing.config.hash == config.hash else {
                    throw HTTPProblem(.conflict, .subscriptionExists, "subscription '\(id)' exists with another configuration")
                }
                return (existing, false)
            }
        }
        // Events committed while it was being made (after its streams were linked at their
        // tails, before it was in memory to hear of them) are its work already.
        if made.created { await wakeIfPending(id, triggeredBy: nil) }
        return made
    }

    func get(_ id: String) async throws(HTTPProblem) -> WakeSubscription {
        try await refresh(id)
        guard let subscription = subscriptions[id] else { throw .notFound(subscription: id) }
        return subscription
    }

    func delete(_ id: String) async throws(HTTPProblem) {
        let removed = try await exclusively { () async throws(HTTPProblem) -> WakeSubscription in
            for _ in 0..<16 {
                try await refresh(id)
                guard let subscription = subscriptions[id] else { throw .notFound(subscription: id) }
                let write = SubscriptionWrite(id: id, contents: nil, expected: subscription.revision)
                switch try await run({ done in store.write(write, completion: done) }) {
                case .written:
                    subscriptions[id] = nil
                    alarms.removeValue(forKey: id)?.cancel()
                    return subscription
                case .changed(let row):
                    adopt(row, id: id)
                }
            }
            throw HTTPProblem.busy("subscription '\(id)' kept changing; try again")
        }
        for stream in removed.linkedStreams(in: store) where store.consumers(of: stream)?.contains(where: { $0.name == removed.consumerName }) == true {
            _ = try? await run { done in store.deleteConsumer(removed.consumerName, of: stream, completion: done) }
        }
    }

    /// POST …/streams: more explicit streams, each linked at its tail.
    func add(_ streams: [String], to id: String) async throws(HTTPProblem) {
        try await exclusively { () async throws(HTTPProblem) in
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
    func remove(_ stream: String, from id: String) async throws(HTTPProblem) {
        let subscription = try await exclusively { () async throws(HTTPProblem) -> WakeSubscription in
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
}
