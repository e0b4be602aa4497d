import Foundation
import ReplayCore
import ReplaySync
import Testing

@testable import ReplayClient

/// A subscription's events between the connection and its consumer.
@Suite("SubscriptionFeed")
struct SubscriptionFeedTests {
    private static func event(_ sequence: UInt64) -> SubscriptionFeed.Item {
        .event(ReplayEvent(stream: "s", sequence: sequence, time: "", payload: Data()))
    }

    @Test func aConsumerThatFallsBehindStopsTheSocketAndOneThatCatchesUpResumesIt() async throws {
        let reading = Locked<[Bool]>([])
        let feed = SubscriptionFeed(windowed: false, reading: { on in reading.withLock { $0.append(on) } }, abandoned: {})
        let high = UInt64(SubscriptionFeed.highWatermark)
        for sequence in 1...high + 10 { feed.push(Self.event(sequence)) }
        #expect(reading.withLock { $0 } == [false], "past the high watermark, reading stops (once)")

        let iterator = feed.events.makeAsyncIterator()
        let toLow = Int(high) + 10 - SubscriptionFeed.lowWatermark + 1
        for expected in 1...UInt64(toLow) {
            guard case .event(let event) = try await iterator.next() else { Issue.record("expected an event"); return }
            #expect(event.sequence == expected)
        }
        #expect(reading.withLock { $0 } == [false, true], "below the low watermark, reading resumes")
        feed.finish(.success(()))
    }

    @Test func aConsumerThatLeavesFirstUnsubscribesAndOneTheDaemonEndedDoesNot() async throws {
        let abandoned = Locked(0)
        do {
            let feed = SubscriptionFeed(windowed: false, reading: { _ in }, abandoned: { abandoned.withLock { $0 += 1 } })
            feed.push(Self.event(1))
            var iterator: SubscriptionFeed.Events.AsyncIterator? = feed.events.makeAsyncIterator()
            _ = try await iterator?.next()
            iterator = nil  // the consumer walks away
        }
        #expect(abandoned.withLock { $0 } == 1)

        let feed = SubscriptionFeed(windowed: false, reading: { _ in }, abandoned: { abandoned.withLock { $0 += 1 } })
        let iterator = feed.events.makeAsyncIterator()
        feed.finish(.success(()))  // COMPLETED from the daemon
        #expect(try await iterator.next() == nil)
        #expect(abandoned.withLock { $0 } == 1, "a subscription the daemon ended is not unsubscribed again")
    }
}
