import Foundation
import ReplayClient
import ReplayCore
import ReplayModel
import ReplayProtocol
import ReplaySync
import ReplayTesting
import Testing

@Suite("ReplayClient", .timeLimit(.minutes(3)))
struct ReplayClientTests {
    @Test func publishSubscribeAndAdministration() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.ping()
            try await client.create("orders", capacity: 100)
            #expect(try await client.publish("orders", #"{"id":1}"#) == 1)
            let many = try await client.publish("orders", contentsOf: (2...1000).map { Data(#"{"id":\#($0)}"#.utf8) })
            #expect(try many.map { try $0.get() } == Array(2...1000))

            var seen: [UInt64] = []
            for try await event in try await client.subscribe("orders", from: .last(3)) {
                seen.append(event.sequence)
                if seen.count == 3 { break }
            }
            #expect(seen == [998, 999, 1000])
            let info = try await client.info("orders")
            #expect(info.count == 100 && info.lastSeq == 1000 && info.capacity == 100)
            #expect(try await client.list().map(\.name) == ["orders"])

            try await client.fail("orders", message: "upstream gone")
            await #expect(throws: ReplayClientError.streamFailed(stream: "orders", message: "upstream gone")) {
                for try await _ in try await client.subscribe("orders") {}
            }
            await #expect(throws: ReplayClientError.self) { try await client.publish("orders", "late") }
            try await client.reset("orders", keepHistory: false)
            #expect(try await client.publish("orders", "again") == 1001)
            try await client.delete("orders")
            await client.close()
        }
    }

    @Test func aTraceContextGoesFromPublishToEveryReader() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let trace = try #require(TraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
            #expect(trace.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && trace.parentID == "00f067aa0ba902b7" && trace.isSampled)
            #expect(try await client.publish("orders", "traced", traceParent: trace) == 1)
            #expect(try await client.publish("orders", "plain") == 2)
            var seen: [TraceParent?] = []
            for try await event in try await client.subscribe("orders") {
                seen.append(event.traceParent)
                if seen.count == 2 { break }
            }
            #expect(seen == [trace, nil])
            await client.close()
        }
    }

    @Test func aKeyGoesFromPublishToEveryReaderAndLatestFindsItsValue() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let key = try #require(EventKey("customer-7"))
            #expect(EventKey("two words") == nil && EventKey("") == nil && EventKey(String(repeating: "k", count: 257)) == nil)
            #expect(try await client.publish("customers", "silver", key: key) == 1)
            #expect(try await client.publish("customers", "plain") == 2)
            #expect(try await client.publish("customers", "gold", key: key) == 3)
            var seen: [EventKey?] = []
            for try await event in try await client.subscribe("customers") {
                seen.append(event.key)
                if seen.count == 3 { break }
            }
            #expect(seen == [key, nil, key])
            let value = try #require(try await client.latest("customers", key: key))
            #expect(value.seq == 3 && value.payload == Data("gold".utf8) && value.key == "customer-7")
            #expect(try await client.latest("customers", key: EventKey("nobody")!) == nil)
            #expect(try await client.publish("customers", Data(), key: key) == 4)
            #expect(try await client.latest("customers", key: key) == nil, "an empty payload is the key's tombstone")
            #expect(try await client.publish("customers", "other", key: EventKey("customer-8")) == 5)
            var snapshot: [UInt64] = []
            for try await event in try await client.subscribe("customers", from: .snapshot) {
                snapshot.append(event.sequence)
                if snapshot.count == 1 { break }
            }
            #expect(snapshot == [5], "customer-7 was deleted; the unkeyed event is no key's")
            await client.close()
        }
    }

    @Test func connectingToNothingSaysTheDaemonIsNotRunning() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/none.sock"
            await #expect(throws: ReplayClientError.daemonNotRunning(socketPath: path, reason: "No such file or directory")) {
                _ = try await ReplayClient.connect(to: path)
            }
        }
    }

    /// A remote stream as a core Signal: core operators compose with it, and each
    /// subscription of the signal is one subscription on the server.
    @Test func remoteStreamAsACoreSignal() async throws {
        try await withDaemon { daemon in
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            _ = try await client.publish("nums", contentsOf: (1...10).map { Data("\($0)".utf8) })
            let evens = client.signal("nums")
                .map { Int($0.text!)! }
                .filter { $0 % 2 == 0 }
                .take(first: 3)
                .scan(start: 0, reduce: +)
            let first = Locked<[Int]>([])
            let second = Locked<[Int]>([])
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { for try await value in evens.values { first.withLock { $0.append(value) } } }
                group.addTask { for try await value in evens.values { second.withLock { $0.append(value) } } }
                try await group.waitForAll()
            }
            #expect(first.value == [2, 6, 12])
            #expect(second.value == [2, 6, 12], "the cold signal ran a subscription of its own")

            // While a signal subscription lives, the server counts it; disposal unsubscribes.
            let received = Locked(0)
            let subscription = client.signal("nums").subscribe(next: { _ in received.withLock { $0 += 1 } })
            while received.value < 10 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(try await client.info("nums").subscribers == 1)
            subscription.dispose()
            while try await client.info("nums").subscribers != 0 { try await Task.sleep(for: .milliseconds(5)) }
            await client.close()
        }
    }

    /// The daemon is killed and restarted under a resuming subscription: the consumer sees
    /// every event once, in order, across the restart.
    @Test func resumingSubscriptionSurvivesADaemonRestart() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await TestDaemon.start(in: directory)
            let publisher = try await ReplayClient.connect(to: first.socketPath)
            _ = try await publisher.publish("jobs", contentsOf: (1...5).map { Data("job \($0)".utf8) })
            await publisher.close()

            let reconnects = Locked(0)
            let resuming = ResumingSubscription(
                socketPath: first.socketPath, stream: "jobs", initialBackoff: 0.02,
                onReconnect: { _ in reconnects.withLock { $0 += 1 } })
            var iterator = resuming.makeAsyncIterator()
            var seen: [UInt64] = []
            for _ in 1...5 { seen.append(try await iterator.next()!.sequence) }

            await first.stop(SIGKILL)
            let second = try await TestDaemon.start(in: directory)
            let again = try await ReplayClient.connect(to: second.socketPath)
            _ = try await again.publish("jobs", contentsOf: (6...10).map { Data("job \($0)".utf8) })
            for _ in 6...10 { seen.append(try await iterator.next()!.sequence) }
            #expect(seen == Array(1...10))
            #expect(reconnects.value >= 1)
            await again.close()
            await second.stop()
        }
    }
}
