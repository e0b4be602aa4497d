import Foundation
import Testing

@testable import ReplayServer

/// The subscription rules that need no daemon: the retry schedule, the webhook target rule,
/// and the configuration's digest.
@Suite("Subscription rules")
struct SubscriptionRulesTests {
    @Test func deliveriesAreRetriedAfterOneSecondDoublingToAMinuteWithinTwentyPercent() {
        for (retries, base) in [(1, 1_000.0), (2, 2_000), (3, 4_000), (6, 32_000), (7, 60_000), (30, 60_000)] {
            #expect(SubscriptionState.backoffMillis(retries: retries, jitter: 0) == Int64(base))
            #expect(SubscriptionState.backoffMillis(retries: retries, jitter: -1) == Int64(base * 0.8))
            #expect(SubscriptionState.backoffMillis(retries: retries, jitter: 1) == Int64(base * 1.2))
        }
    }

    @Test func webhookTargetsFollowTheSSRFRules() throws {
        let strict = WebhookTargetRule()
        for allowed in ["https://hooks.example/x", "http://localhost:8080/x", "http://127.0.0.1:9/x", "https://8.8.8.8/x"] {
            #expect(throws: Never.self, "\(allowed)") { try strict.check(allowed) }
        }
        for refused in [
            "http://hooks.example/x", "https://10.0.0.1/x", "https://172.31.255.255/x", "https://192.168.0.1/x", "https://169.254.169.254/x",
            "https://0.0.0.0/x", "https://localhost/x", "https://[::1]/x", "ftp://hooks.example/x", "hooks.example", "",
        ] {
            #expect(throws: HTTPProblem.self, "\(refused)") { try strict.check(refused) }
        }
        let trusting = WebhookTargetRule(allowPrivate: true)
        #expect(throws: Never.self) { try trusting.check("https://10.0.0.1/x") }
        #expect(throws: Never.self) { try trusting.check("http://192.168.1.5/x") }
        #expect(throws: HTTPProblem.self) { try trusting.check("http://hooks.example/x") }
    }

    @Test func aConfigurationsDigestIgnoresTheOrderOfItsStreams() throws {
        let rule = WebhookTargetRule()
        let one = try SubscriptionConfig.parse(["type": "pull-wake", "streams": ["b", "a", "a"], "wake_stream": "w"], webhookTargets: rule)
        let two = try SubscriptionConfig.parse(["type": "pull-wake", "streams": ["/a/", "b"], "wake_stream": "w"], webhookTargets: rule)
        let other = try SubscriptionConfig.parse(["type": "pull-wake", "streams": ["a", "b"], "wake_stream": "w", "lease_ttl_ms": 2000], webhookTargets: rule)
        #expect(one.streams == ["a", "b"])
        #expect(one.hash == two.hash)
        #expect(one.hash != other.hash)
    }
}
