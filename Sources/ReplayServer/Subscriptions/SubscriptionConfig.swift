import Crypto
import Foundation
import ReplayModel

/// What a subscription is, as its PUT declared it (Durable Streams §7): how it wakes its
/// workers (a webhook, or wake events in a stream that pull workers watch), which streams it
/// follows (a glob pattern, explicit streams, or both), and how long a worker's lease lasts.
/// A second PUT of the same id is judged on `hash`, a digest of this normalized form: the
/// same configuration is a confirmation (200), another is a conflict (409).
struct SubscriptionConfig: Codable, Equatable, Sendable {
    enum Kind: String, Codable, Sendable {
        case webhook
        case pullWake = "pull-wake"
    }

    var type: Kind
    var pattern: String?
    /// The explicit streams the PUT named, without repeats, sorted.
    var streams: [String]
    var webhookURL: String?
    var wakeStream: String?
    var leaseTTLMillis: Int
    var description: String?

    static let defaultLeaseTTLMillis = 30_000
    /// Shorter leases would expire under a worker's ordinary pauses; longer ones keep work
    /// stuck behind a dead worker (the reference server's bounds).
    static let leaseTTLBounds = 1_000...600_000

    enum CodingKeys: String, CodingKey {
        case type, pattern, streams, description
        case webhookURL = "webhook_url"
        case wakeStream = "wake_stream"
        case leaseTTLMillis = "lease_ttl_ms"
    }

    /// The digest of the normalized configuration (keys sorted, streams sorted).
    var hash: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(self)) ?? Data()
        return SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// The configuration a PUT's body declares, or what is wrong with it.
    static func parse(_ body: [String: Any], webhookTargets: WebhookTargetRule) throws(HTTPProblem) -> SubscriptionConfig {
        guard let typeText = body["type"] as? String else { throw .invalid("'type' is required: \"webhook\" or \"pull-wake\"") }
        guard let type = Kind(rawValue: typeText) else {
            throw .invalid("unknown type '\(typeText.prefix(40))': a subscription is \"webhook\" or \"pull-wake\"")
        }
        var pattern: String?
        if let value = body["pattern"] {
            guard let text = value as? String else { throw .invalid("'pattern' must be a string") }
            if case .failure(let error) = StreamPattern.parse(text) { throw .invalid("'pattern' \(text.prefix(80)): \(error)") }
            pattern = text
        }
        var streams: [String] = []
        if let value = body["streams"] {
            guard let list = value as? [String] else { throw .invalid("'streams' must be an array of stream names") }
            streams = try names(list)
        }
        guard pattern != nil || !streams.isEmpty else {
            throw .invalid("a subscription follows a 'pattern', explicit 'streams', or both; neither was given")
        }
        var lease = defaultLeaseTTLMillis
        if let value = body["lease_ttl_ms"] {
            // (`true` reads as 1 here, and is refused as out of bounds.)
            guard let number = value as? NSNumber, let millis = Int(exactly: number.doubleValue) else {
                throw .invalid("'lease_ttl_ms' must be a whole number of milliseconds")
            }
            guard leaseTTLBounds.contains(millis) else {
                throw .invalid("'lease_ttl_ms' must be between \(leaseTTLBounds.lowerBound) (1 s) and \(leaseTTLBounds.upperBound) (10 min), not \(millis)")
            }
            lease = millis
        }
        var description: String?
        if let value = body["description"] {
            guard let text = value as? String else { throw .invalid("'description' must be a string") }
            description = text
        }
        var config = SubscriptionConfig(
            type: type, pattern: pattern, streams: streams, webhookURL: nil, wakeStream: nil, leaseTTLMillis: lease, description: description)
        switch type {
        case .webhook:
            guard let webhook = body["webhook"] as? [String: Any], let url = webhook["url"] as? String else {
                throw .invalid("a webhook subscription needs 'webhook': {\"url\": …}")
            }
            try webhookTargets.check(url)
            config.webhookURL = url
        case .pullWake:
            guard let wake = body["wake_stream"] as? String else {
                throw .invalid("a pull-wake subscription needs 'wake_stream', the stream its wake events go to")
            }
            config.wakeStream = try names([wake])[0]
        }
        return config
    }

    /// Stream names as the protocol writes them (no leading or trailing slash), each checked
    /// by the stream-name rule; sorted, without repeats.
    static func names(_ list: [String]) throws(HTTPProblem) -> [String] {
        var names = Set<String>()
        for raw in list {
            let name = normalized(raw)
            if let problem = StreamName.problem(with: name) {
                throw .invalid("'\(raw.prefix(80))' is not a valid stream name (\(problem)): \(StreamName.rule)")
            }
            if name == reservedPrefix || name.hasPrefix(reservedPrefix + "/") {
                throw .invalid("'\(name.prefix(80))' is under the reserved '\(reservedPrefix)/' prefix")
            }
            names.insert(name)
        }
        return names.sorted()
    }

    static func normalized(_ path: String) -> String {
        var path = Substring(path)
        while path.hasPrefix("/") { path = path.dropFirst() }
        while path.hasSuffix("/") { path = path.dropLast() }
        return String(path)
    }

    /// The protocol's reserved path under the stream root: the subscription API and the keys.
    static let reservedPrefix = "__ds"
}
