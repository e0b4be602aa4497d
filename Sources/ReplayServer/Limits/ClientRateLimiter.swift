import Logging
import NIOCore
import ReplayAuth
import ReplaySync

/// The HTTP door's rate limits, per client: per token (its subject) where tokens are in
/// use, else per remote address. One table for the door, shared by every connection, as
/// a client may spread its requests over many. (The socket's limits are per connection,
/// kept by its `CommandRouter` without a lock.)
///
/// The table forgets a client whose buckets have refilled, so it holds only those active
/// within about one period; it is swept when it grows past `sweepAbove`.
final class ClientRateLimiter: Sendable {
    private let clients = Locked<[String: ClientAllowance]>([:])
    private let now: @Sendable () -> UInt64
    private let logger: Logger
    private let sweepAbove: Int

    init(logger: Logger, sweepAbove: Int = 10_000, now: @escaping @Sendable () -> UInt64 = { NIODeadline.now().uptimeNanoseconds }) {
        self.logger = logger
        self.sweepAbove = sweepAbove
        self.now = now
    }

    /// `nil`: admitted. Else how long the client should wait, and the refusal has been
    /// counted (and logged, once per run of refusals).
    func admit(_ client: String, limits: ClientLimits, bytes: Int) -> Duration? {
        let time = now()
        let (wait, first) =
            update(client, limits: limits, at: time) { allowance in
                let wasLimited = allowance.isLimited
                let wait = allowance.admit(bytes: bytes, at: time)
                return (wait, wait != nil && !wasLimited)
            } ?? (nil, false)
        if wait != nil {
            DaemonMetrics.rateLimited.increment()
            if first { logger.notice("http: rate limited: \(client) is over \(Self.describe(limits))") }
        }
        return wait
    }

    /// Takes one request and `bytes` if the client is within its rates; else changes and
    /// counts nothing, so that the request can go on to `admit`, which refuses it in the
    /// one wording (a POST served on its event loop, `InlineAppends`).
    func takeIfWithin(_ client: String, limits: ClientLimits, bytes: Int) -> Bool {
        let time = now()
        return update(client, limits: limits, at: time) { $0.takeIfWithin(bytes: bytes, at: time) } ?? true
    }

    /// Gives back what an admission took: the request was handed on to be admitted again.
    func refund(_ client: String, bytes: Int) {
        clients.withLock { table in table[client]?.refund(bytes: bytes) }
    }

    /// Charges body bytes as they arrive (see `TokenBucket`).
    func charge(_ client: String, bytes: Int) {
        let time = now()
        clients.withLock { table in table[client]?.charge(bytes: bytes, at: time) }
    }

    /// `body` on the client's allowance (a new one if its limits changed), kept in the
    /// table; `nil` where the limits limit no rate.
    private func update<Result>(
        _ client: String, limits: ClientLimits, at time: UInt64, _ body: (inout ClientAllowance) -> Result
    ) -> Result? {
        clients.withLock { table in
            var allowance = table[client].flatMap { $0.limits == limits ? $0 : nil } ?? ClientAllowance(limits, now: time)
            guard allowance.isActive else { return nil }
            let result = body(&allowance)
            if table[client] == nil, table.count >= sweepAbove { Self.sweep(&table, at: time) }
            table[client] = allowance
            return result
        }
    }

    /// How many clients the table holds (for tests of the sweep).
    var count: Int { clients.withLock { $0.count } }

    private static func sweep(_ table: inout [String: ClientAllowance], at time: UInt64) {
        for key in Array(table.keys) {
            if table[key]?.isIdle(at: time) == true { table[key] = nil }
        }
    }

    static func describe(_ limits: ClientLimits) -> String {
        [limits.requests.map { "\($0) requests" }, limits.bytes.map { "\($0) bytes" }].compactMap { $0 }.joined(separator: " and ")
    }
}
