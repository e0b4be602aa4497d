import Logging
import ReplayAuth
import Synchronization
import Testing

@testable import ReplayServer

/// The rate limits' decisions on virtual time: nanoseconds passed in, no clock read.
@Suite("rate limits: token buckets on virtual time")
struct TokenBucketTests {
    static let second: UInt64 = 1_000_000_000

    @Test func ratesAreWrittenAsCountsPerPeriod() {
        #expect(RateLimit("100/s") == RateLimit(count: 100, period: .seconds(1)))
        #expect(RateLimit("6000/min") == RateLimit(count: 6000, period: .seconds(60)))
        #expect(RateLimit("1M/s") == RateLimit(count: 1_000_000, period: .seconds(1)))
        #expect(RateLimit("2k/h") == RateLimit(count: 2000, period: .seconds(3600)))
        for bad in ["", "100", "0/s", "-1/s", "10/day", "x/s", "1Q/s", "/s", "10/s/s"] { #expect(RateLimit(bad) == nil, "\(bad)") }
        #expect(RateLimit("6000/min")?.description == "6000/min")
    }

    @Test func aBucketGivesItsBurstThenRefillsAtItsRate() {
        var allowance = ClientAllowance(ClientLimits(requests: RateLimit(count: 3, period: .seconds(1))), now: 0)
        for _ in 0..<3 { #expect(allowance.admit(bytes: 0, at: 0) == nil) }
        // The fourth waits a third of a second: one request's refill.
        let wait = allowance.admit(bytes: 0, at: 0)
        #expect(wait == .nanoseconds(333_333_334))
        #expect(allowance.isLimited)
        #expect(wait?.retryAfterSeconds == 1)
        #expect(allowance.admit(bytes: 0, at: Self.second / 3 + 1) == nil)
        #expect(!allowance.isLimited)
        #expect(allowance.admit(bytes: 0, at: Self.second / 3 + 2) != nil)
        // Never more than one period's worth saved up, however long it was idle.
        let later = 3600 * Self.second
        for _ in 0..<3 { #expect(allowance.admit(bytes: 0, at: later) == nil) }
        #expect(allowance.admit(bytes: 0, at: later) != nil)
    }

    @Test func bytesAreCountedAndABodyLargerThanTheBucketPassesOnlyWhenItIsFull() {
        var allowance = ClientAllowance(ClientLimits(bytes: RateLimit(count: 1000, period: .seconds(1))), now: 0)
        #expect(allowance.admit(bytes: 600, at: 0) == nil)
        // 400 left: 600 more waits for 200 bytes' refill, a fifth of a second.
        #expect(allowance.admit(bytes: 600, at: 0) == .milliseconds(200))
        #expect(allowance.admit(bytes: 400, at: 0) == nil)
        // 5,000 bytes in one request: taken once the bucket is full, leaving a debt...
        #expect(allowance.admit(bytes: 5000, at: 0) != nil)
        #expect(allowance.admit(bytes: 5000, at: Self.second) == nil)
        // ...paid off before anything else passes: 4 s of refill.
        #expect(allowance.admit(bytes: 1, at: Self.second) == .seconds(4) + .milliseconds(1))
        #expect(allowance.admit(bytes: 1, at: 5 * Self.second + Self.second / 1000) == nil)
    }

    @Test func aBodyOfUnknownLengthIsChargedAsItArrives() {
        var allowance = ClientAllowance(ClientLimits(bytes: RateLimit(count: 1000, period: .seconds(1))), now: 0)
        #expect(allowance.admit(bytes: 0, at: 0) == nil)
        allowance.charge(bytes: 1500, at: 0)
        #expect(allowance.admit(bytes: 0, at: 0) == .milliseconds(500))
        #expect(allowance.admit(bytes: 0, at: Self.second / 2) == nil)
    }

    /// What a POST served on its event loop uses: a charge taken only when within the rates
    /// (a refusal changes nothing, left for `admit` to count and word), and given back when
    /// the request is handed on to be admitted again.
    @Test func aChargeTakenOnlyWithinTheRatesCanBeGivenBack() {
        let limiter = ClientRateLimiter(logger: .init(label: "test"), now: { 0 })
        let limits = ClientLimits(requests: RateLimit(count: 2, period: .seconds(1)), bytes: RateLimit(count: 100, period: .seconds(1)))
        #expect(limiter.takeIfWithin("c", limits: limits, bytes: 60))
        #expect(!limiter.takeIfWithin("c", limits: limits, bytes: 60), "40 bytes left")
        limiter.refund("c", bytes: 60)
        // Both buckets full again, never more than full.
        limiter.refund("c", bytes: 60)
        #expect(limiter.takeIfWithin("c", limits: limits, bytes: 100))
        #expect(limiter.admit("c", limits: limits, bytes: 0) == nil)
        // Out of requests: refused, and the refusal is admit's, still the first of its run.
        #expect(!limiter.takeIfWithin("c", limits: limits, bytes: 0))
        var allowance = ClientAllowance(limits, now: 0)
        _ = allowance.takeIfWithin(bytes: 100, at: 0)
        _ = allowance.takeIfWithin(bytes: 0, at: 0)
        let taken = allowance.takeIfWithin(bytes: 0, at: 0)
        #expect(!taken)
        #expect(!allowance.isLimited)
        #expect(limiter.takeIfWithin("free", limits: .none, bytes: 1_000))
        #expect(limiter.count == 1)
    }

    @Test func aTokensOwnLimitsOverrideTheDaemonsOnesWhereTheyAreSet() {
        let daemon = ClientLimits(requests: RateLimit("10/s"), bytes: RateLimit("1M/s"), streams: 5)
        let token = ClientLimits(requests: RateLimit("1000/s"), streams: 50)
        #expect(token.over(daemon) == ClientLimits(requests: RateLimit("1000/s"), bytes: RateLimit("1M/s"), streams: 50))
        #expect(ClientLimits.none.over(daemon) == daemon)
    }

    @Test func theDoorsTableForgetsClientsWhoseBucketsRefilled() {
        let clock = Clock()
        let limiter = ClientRateLimiter(logger: .init(label: "test"), sweepAbove: 4, now: { clock.now.load(ordering: .relaxed) })
        let limits = ClientLimits(requests: RateLimit(count: 2, period: .seconds(1)))
        for client in 0..<4 { #expect(limiter.admit("c\(client)", limits: limits, bytes: 0) == nil) }
        #expect(limiter.count == 4)
        // One client over its rate does not touch another's.
        #expect(limiter.admit("c0", limits: limits, bytes: 0) == nil)
        #expect(limiter.admit("c0", limits: limits, bytes: 0) != nil)
        #expect(limiter.admit("c1", limits: limits, bytes: 0) == nil)
        // A second later all have refilled: a new client sweeps them out.
        clock.now.store(2 * Self.second, ordering: .relaxed)
        #expect(limiter.admit("new", limits: limits, bytes: 0) == nil)
        #expect(limiter.count == 1)
        // Without any rate, nothing is kept.
        #expect(limiter.admit("free", limits: .none, bytes: 0) == nil)
        #expect(limiter.count == 1)
    }

    final class Clock: Sendable {
        let now = Atomic<UInt64>(0)
    }
}
