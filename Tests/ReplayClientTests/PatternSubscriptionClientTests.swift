import Foundation
import ReplayClient
import ReplayModel
import ReplayTesting
import Synchronization
import Testing

/// `ReplayClient.subscribe(pattern:)`: every matching stream, those created later too, and
/// a stream's end ends only its part.
@Suite("Pattern subscriptions in the client")
struct PatternSubscriptionClientTests {
    @Test func aStreamThatEndsIsReportedAndTheOthersGoOn() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("orders/eu", "e1")
            _ = try await client.publish("orders/us", "u1")
            try await client.complete("orders/us")
            let ended = Mutex<[String]>([])
            guard case .success(let pattern) = StreamPattern.parse("orders/*") else { throw TestFailure("a valid pattern") }
            let subscription = try await client.subscribe(
                pattern: pattern,
                onEnd: { stream, failure in
                    ended.withLock { $0.append("\(stream) \(failure ?? "completed")") }
                })
            let received = Mutex<[String]>([])
            // The subscription is read on as a consumer would, for as long as the test runs.
            let reading = Task {
                for try await event in subscription { received.withLock { $0.append(event.text ?? "") } }
            }
            try await eventually("both streams' events, and the completed one's end") {
                received.withLock { Set($0) } == ["e1", "u1"] && ended.withLock { $0 } == ["orders/us completed"]
            }
            // It goes on: the other stream, and one created later.
            _ = try await client.publish("orders/eu", "e2")
            _ = try await client.publish("orders/asia", "a1")
            try await eventually("the later events") { received.withLock { Set($0) } == ["e1", "u1", "e2", "a1"] }
            reading.cancel()
            await client.close()
        }
    }
}
