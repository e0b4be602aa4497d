import Foundation
import ReplayProtocol
import ReplayTesting
import Testing

@testable import ReplayClient

/// Per-subscription flow control (`SUB … window=<n>`, `MORE`) against the real daemon:
/// on one connection, a subscription that is never read does not stop another from
/// receiving 100,000 events, and each side holds at most the window for it.
@Suite("Flow control per subscription", .timeLimit(.minutes(5)))
struct FlowControlTests {
    @Test func aSubscriptionNeverReadDoesNotStopItsSiblingOnTheSameConnection() async throws {
        try await withDaemon(arguments: ["--default-capacity", "unlimited"]) { daemon in
            let publisher = try await ReplayClient.connect(to: daemon.socketPath)
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let window = 64
            let slow = try await client.subscribe("slow", window: window)
            let fast = try await client.subscribe("fast")
            let payload = Data(repeating: 0x61, count: 100)
            for _ in 0..<5 { _ = try await publisher.publish("slow", contentsOf: Array(repeating: payload, count: 2_000)) }

            let total = 100_000
            let reader = Task {
                var count = 0
                var last: UInt64 = 0
                for try await event in fast {
                    #expect(event.sequence == last + 1)
                    last = event.sequence
                    count += 1
                    if count == total { break }
                }
                return count
            }
            for _ in 0..<(total / 5_000) { _ = try await publisher.publish("fast", contentsOf: Array(repeating: payload, count: 5_000)) }
            #expect(try await reader.value == total)

            // The client holds the window of the subscription nobody reads, no more...
            try await eventually("the slow subscription's window to arrive") { slow.feed.heldEvents == window }
            #expect(slow.feed.heldEvents == window)
            // ...and the daemon's cursor waits at the window's end, for this one only.
            try await eventually("the daemon to wait for MORE") {
                await TestDaemon.stateDump(socketPath: daemon.socketPath).contains("waiting for MORE after \(window)")
            }

            // Reading it grants more as it goes: all 10,000 come, in order.
            var seen: UInt64 = 0
            for try await event in slow {
                #expect(event.sequence == seen + 1)
                seen = event.sequence
                if seen == 10_000 { break }
                #expect(slow.feed.heldEvents <= window)
            }
            #expect(seen == 10_000)
            await client.close()
            await publisher.close()
        }
    }

    @Test func moreNeedsAWindowedSubscriptionAndWindowFitsOnlyOneStream() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { wire in
                try await wire.send(
                    "SUB a s1 all\r\nMORE s1 10\r\nMORE nope 1\r\nSUB a/* s2 window=5\r\nSUB a s3 window=0\r\nSUB a s4 new window=2\r\nMORE s4 3\r\n")
                let frames = try await wire.frames(7)
                #expect(frames[0] == .ok)
                guard case .error(let noWindow) = frames[1], case .error(let unknown) = frames[2], case .error(let pattern) = frames[3],
                    case .error(let zero) = frames[4]
                else { throw TestFailure("\(frames)") }
                #expect(noWindow.message.contains("has no window"))
                #expect(unknown.code == .unknownSubscription)
                #expect(pattern.message.contains("window= is for a SUB of one stream"))
                #expect(zero.message.contains("window= is a count of events"))
                #expect(frames[5] == .ok && frames[6] == .ok)
            }
        }
    }
}
