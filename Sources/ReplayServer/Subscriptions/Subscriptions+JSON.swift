import Foundation
import Logging
import ReplayModel
import ReplayStore

/// What the control API answers: a subscription, its positions and its URLs, as JSON.
extension Subscriptions {
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

    func json(_ subscription: WakeSubscription) -> [String: Any] {
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
}
