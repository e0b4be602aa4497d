import Foundation
import ReplayModel
import ReplayProtocol
import ReplayStore

/// Where a subscription stands, kept in its row beside its configuration so that a restart
/// resumes it: its explicit streams, its current wake (generation, id, the streams' tails
/// when it was made) and who holds it until when, and a failing webhook's retry schedule.
/// The streams' acknowledged positions are not here: each is a durable consumer of its
/// stream (`WakeSubscription.consumerName`), moved by the writer like any consumer's.
struct SubscriptionState: Codable, Equatable, Sendable {
    enum Status: String, Codable, Sendable {
        case active
        /// The last webhook delivery failed; another is scheduled (`nextAttempt`).
        case failed
    }

    var createdAt: String
    var status: Status = .active
    /// The explicit streams: the PUT's, with those added and removed since.
    var explicit: [String]
    /// Raised by every wake: what a token, a claim or an ack is fenced by.
    var generation = 0
    /// The current wake, if one is outstanding (made and not yet finished).
    var wakeID: String?
    /// The tail of each linked stream when the wake was made: what a webhook's
    /// `{"done": true}` acknowledges.
    var snapshot: [String: UInt64] = [:]
    /// The worker holding the wake (pull-wake), and when its lease ends (ms since 1970).
    var holder: String?
    var leaseUntil: Int64?
    /// Failed webhook deliveries in a row, and when the next is due (ms since 1970).
    var retries = 0
    var nextAttempt: Int64?

    enum CodingKeys: String, CodingKey {
        case status, explicit, generation, snapshot, holder, retries
        case createdAt = "created_at"
        case wakeID = "wake_id"
        case leaseUntil = "lease_until"
        case nextAttempt = "next_attempt"
    }

    /// The wake is over (finished, released, or its lease ran out).
    mutating func endWake() {
        wakeID = nil
        snapshot = [:]
        holder = nil
        leaseUntil = nil
        nextAttempt = nil
    }

    /// The delay before the next delivery after `retries` failures in a row: 1 s doubling
    /// to 60 s, each ±20 % at random so that receivers coming back are not hit all at once.
    static func backoffMillis(retries: Int, jitter: Double) -> Int64 {
        let base = min(1_000 * pow(2, Double(max(0, retries - 1))), 60_000)
        return Int64((base * (1 + 0.2 * jitter)).rounded())
    }
}

/// One Durable Streams subscription (a subscription that wakes workers, unlike a socket
/// `Subscription`, which delivers events to its connection): its configuration and state.
struct WakeSubscription: Sendable {
    let id: String
    let config: SubscriptionConfig
    var state: SubscriptionState
    /// The revision of its row this state was read from or written as (0: not written yet).
    var revision: Int64
    let pattern: StreamPattern?

    init(id: String, config: SubscriptionConfig, state: SubscriptionState, revision: Int64 = 0) {
        self.id = id
        self.config = config
        self.state = state
        self.revision = revision
        pattern = config.pattern.flatMap { try? StreamPattern.parse($0).get() }
    }

    /// The subscription as its row holds it; `nil` for a row this build cannot read.
    init?(_ row: SubscriptionRow) {
        let decoder = JSONDecoder()
        guard let config = try? decoder.decode(SubscriptionConfig.self, from: Data(row.config.utf8)),
            let state = try? decoder.decode(SubscriptionState.self, from: Data(row.state.utf8))
        else { return nil }
        self.init(id: row.id, config: config, state: state, revision: row.revision)
    }

    /// Its row's new contents.
    var contents: (config: String, state: String) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let config = (try? encoder.encode(self.config)) ?? Data()
        let state = (try? encoder.encode(self.state)) ?? Data()
        return (String(decoding: config, as: UTF8.self), String(decoding: state, as: UTF8.self))
    }

    /// The durable consumer that keeps this subscription's position in each linked stream.
    var consumerName: String { Self.consumerName(id) }
    static func consumerName(_ id: String) -> String { "__ds/" + id }

    /// Whether `stream` is linked: named explicitly, or matched by the pattern. A
    /// subscription's own wake stream, and the reserved prefix, never are.
    func links(_ stream: String) -> Bool {
        guard stream != config.wakeStream, !stream.hasPrefix(SubscriptionConfig.reservedPrefix + "/") else { return false }
        return state.explicit.contains(stream) || pattern?.matches(stream) == true
    }
}

/// A linked stream as a subscription stands in it.
struct SubscriptionPosition: Sendable {
    let path: String
    let explicit: Bool
    let acked: UInt64
    let tail: UInt64
    var hasPending: Bool { tail > acked }
}

extension WakeSubscription {
    /// The linked streams: the explicit ones (existing or not) and the existing ones the
    /// pattern matches.
    func linkedStreams(in store: EventStore) -> [String] {
        var names = Set(state.explicit)
        if pattern != nil {
            for info in store.streams where links(info.name) { names.insert(info.name) }
        }
        return names.sorted()
    }

    /// Its position in each linked stream, as this daemon's catalog has it.
    func positions(in store: EventStore) -> [SubscriptionPosition] {
        linkedStreams(in: store).map { stream in
            let acked = store.consumers(of: stream)?.first { $0.name == consumerName }?.ackedSequence ?? 0
            return SubscriptionPosition(path: stream, explicit: state.explicit.contains(stream), acked: acked, tail: store.info(stream)?.lastSequence ?? 0)
        }
    }

    /// As SUBSCRIPTIONS answers it over the socket.
    func described(in store: EventStore) -> SubscriptionDescription {
        SubscriptionDescription(
            id: id, type: config.type.rawValue, pattern: config.pattern, webhookURL: config.webhookURL, wakeStream: config.wakeStream,
            leaseTTLMs: config.leaseTTLMillis, status: state.status.rawValue, generation: state.generation, wakeID: state.wakeID,
            holder: state.holder, leaseUntil: state.leaseUntil.map(Timestamp.format(millis:)), failures: state.retries,
            streams: positions(in: store).map {
                SubscriptionDescription.Link(stream: $0.path, link: $0.explicit ? "explicit" : "glob", ackedSeq: $0.acked, lastSeq: $0.tail)
            })
    }
}
