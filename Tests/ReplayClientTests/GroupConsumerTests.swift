import Foundation
import ReplayClient
import ReplayProtocol
import ReplaySync
import ReplayTesting
import Testing

/// The Swift client's consumer-group members: events with ack() and nack(), and a member
/// that joins again after the daemon restarts.
@Suite("ReplayClient: group consumers", .timeLimit(.minutes(5)))
struct GroupConsumerTests {
    @Test func eachEventIsAcknowledgedOrGivenBackAndComesAgain() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("jobs", contentsOf: (1...3).map { Data("job \($0)".utf8) })
            let consumer = try await client.join("jobs", group: GroupOptions(group: "g", member: "m"))
            var seen: [UInt64] = []
            var gaveBack = false
            for try await job in consumer {
                seen.append(job.sequence)
                if job.sequence == 2, !gaveBack {
                    gaveBack = true
                    try await job.nack()
                } else {
                    try await job.ack()
                }
                if seen.count == 4 { break }
            }
            // 2 was given back once and handed out again; everything was acknowledged.
            #expect(seen.sorted() == [1, 2, 2, 3])
            let group = try #require(try await client.groups("jobs").first)
            #expect(group.pending == 0 && group.redelivered == 1 && group.lag == 0)
            // An ACK of an event no longer held is refused, and says why.
            await #expect(throws: ReplayClientError.self) { try await consumer.subscription.acknowledge(2) }
            await client.close()
        }
    }

    @Test func aResumingMemberJoinsAgainAfterARestartAndGetsWhatItHadNotAcknowledged() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await TestDaemon.start(in: directory)
            let publisher = try await ReplayClient.connect(to: first.socketPath)
            _ = try await publisher.publish("jobs", contentsOf: (1...4).map { Data("job \($0)".utf8) })
            await publisher.close()
            let reconnects = Locked(0)
            let consumer = ResumingGroupConsumer(
                socketPath: first.socketPath, stream: "jobs", group: GroupOptions(group: "g", ackWait: 2, maxPending: 2),
                initialBackoff: 0.02, onReconnect: { _ in reconnects.withLock { $0 += 1 } })
            var iterator = consumer.makeAsyncIterator()
            // 1 is acknowledged; 2 is held, unacknowledged, when the daemon dies.
            let one = try #require(try await iterator.next())
            try await one.ack()
            let two = try #require(try await iterator.next())
            #expect([one.sequence, two.sequence] == [1, 2])
            await first.stop(SIGKILL)
            let second = try await TestDaemon.start(in: directory)
            var acknowledged: Set<UInt64> = [1]
            while acknowledged.count < 4 {
                let job = try #require(try await iterator.next())
                do {
                    try await job.ack()
                    #expect(job.sequence != 1, "an acknowledged event was handed out again")
                    acknowledged.insert(job.sequence)
                } catch ReplayClientError.disconnected {
                    // Handed out before the daemon died and read after (on a loaded machine,
                    // perhaps again after its ack_wait, before its ACK): it comes again.
                } catch ReplayClientError.server(let refusal) where refusal.code == .invalidAck && acknowledged.contains(job.sequence) {
                    // A second copy: on a loaded machine its ack_wait ran out before the first
                    // copy's ACK, and it was handed to this member again. The first ACK counted.
                }
            }
            #expect(reconnects.value >= 1)
            let check = try await ReplayClient.connect(to: second.socketPath)
            #expect(try await check.groups("jobs").first?.pending == 0)
            await check.close()
            await second.stop()
        }
    }
}
