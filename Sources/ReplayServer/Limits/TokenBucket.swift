import ReplayAuth

/// A token bucket: `rate.count` units per `rate.period`, at most one period's worth saved
/// up. Pure, with the time passed in (nanoseconds on any monotonic clock), so that its
/// decisions are tested on virtual time.
///
/// The balance may go below zero: bytes are charged as a body arrives, when its length was
/// not known beforehand, and a client in debt waits until it is paid off. A cost larger
/// than the whole bucket is taken once the bucket is full (a body bigger than one period's
/// bytes is not refused forever; the client then waits for the debt).
struct TokenBucket: Sendable, Equatable {
    let rate: RateLimit
    private(set) var balance: Double
    private var updated: UInt64

    init(_ rate: RateLimit, now: UInt64) {
        self.rate = rate
        self.balance = Double(rate.count)
        self.updated = now
    }

    private var capacity: Double { Double(rate.count) }
    /// The period in nanoseconds: refills and waits are computed as `count` per this many,
    /// multiplying before dividing, so whole figures stay whole.
    private var periodNanoseconds: Double {
        let period = rate.period.components
        return Double(period.seconds) * 1e9 + Double(period.attoseconds / 1_000_000_000)
    }

    var isFull: Bool { balance >= capacity }

    mutating func refill(at now: UInt64) {
        guard now > updated else { return }
        balance = min(capacity, balance + Double(now - updated) * capacity / periodNanoseconds)
        updated = now
    }

    /// How long until `cost` can be taken; zero: now. (After `refill`.)
    func wait(for cost: Int) -> Duration {
        let needed = min(Double(cost), capacity) - balance
        guard needed > 0 else { return .zero }
        return .nanoseconds(Int64((needed * periodNanoseconds / capacity).rounded(.up)))
    }

    /// Takes `cost`, into debt if need be.
    mutating func charge(_ cost: Int) {
        balance -= Double(cost)
    }

    /// Gives back what `charge` took, up to a full bucket.
    mutating func refund(_ cost: Int) {
        balance = min(capacity, balance + Double(cost))
    }
}

/// One client's request and byte buckets, as its limits give them.
struct ClientAllowance: Sendable {
    let limits: ClientLimits
    private var requests: TokenBucket?
    private var bytes: TokenBucket?
    /// Refused since the last admission: the first refusal of a run is the one logged.
    private(set) var isLimited = false

    init(_ limits: ClientLimits, now: UInt64) {
        self.limits = limits
        requests = limits.requests.map { TokenBucket($0, now: now) }
        bytes = limits.bytes.map { TokenBucket($0, now: now) }
    }

    /// Whether either rate is limited at all.
    var isActive: Bool { limits.limitsRates }

    /// Takes one request (and `bytes` already known, such as a PUB's payload or a
    /// Content-Length), or says how long to wait before trying again.
    mutating func admit(bytes count: Int, at now: UInt64) -> Duration? {
        let wait = self.wait(bytes: count, at: now)
        guard wait == .zero else {
            isLimited = true
            return wait
        }
        take(bytes: count)
        return nil
    }

    /// Takes one request and `bytes` if the client is within its rates now; else changes
    /// nothing (not even the run of refusals) and returns false.
    mutating func takeIfWithin(bytes count: Int, at now: UInt64) -> Bool {
        guard wait(bytes: count, at: now) == .zero else { return false }
        take(bytes: count)
        return true
    }

    /// Gives back one request and `bytes` taken by `admit` or `takeIfWithin`.
    mutating func refund(bytes count: Int) {
        requests?.refund(1)
        bytes?.refund(count)
    }

    private mutating func wait(bytes count: Int, at now: UInt64) -> Duration {
        requests?.refill(at: now)
        bytes?.refill(at: now)
        return max(requests?.wait(for: 1) ?? .zero, bytes?.wait(for: count) ?? .zero)
    }

    private mutating func take(bytes count: Int) {
        isLimited = false
        requests?.charge(1)
        bytes?.charge(count)
    }

    /// Charges bytes counted after admission (a body of unknown length, as it arrives).
    mutating func charge(bytes count: Int, at now: UInt64) {
        bytes?.refill(at: now)
        bytes?.charge(count)
    }

    /// Whether both buckets have refilled: the client can be forgotten, as a new
    /// allowance would be the same.
    mutating func isIdle(at now: UInt64) -> Bool {
        requests?.refill(at: now)
        bytes?.refill(at: now)
        return (requests?.isFull ?? true) && (bytes?.isFull ?? true)
    }
}

extension Duration {
    /// Whole seconds, rounded up, at least 1: the form of `Retry-After`.
    var retryAfterSeconds: Int {
        let parts = components
        return max(1, Int(parts.seconds) + (parts.attoseconds > 0 ? 1 : 0))
    }
}
