import Foundation
import NIOCore
import ReplayClient
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// Expected sequence, idempotent producers, atomic sends and durable consumers, over the
/// wire, against the real daemon.
@Suite("replayd: append and consume guarantees", .timeLimit(.minutes(5)))
struct GuaranteesTests {
    /// Writers on separate connections append by compare-and-set (read the last sequence,
    /// expect it): each number is won by exactly one, so the log has no holes and no
    /// doubles, whatever the batches.
    @Test func writersRacingWithTheSameExpectationEachWinExactlyOnce() async throws {
        try await withDaemon(arguments: ["--sync", "normal"]) { daemon in
            let writers = 6
            let perWriter = 40
            let wins = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        try await withWireClient(daemon.socketPath) { client in
                            var won = 0
                            var last: UInt64 = 0
                            while won < perWriter {
                                try await client.send(
                                    .publishChecked(
                                        stream: "ledger", payload: ByteBuffer(string: "w\(writer)-\(won)"), checks: AppendConditions(expectedLastSequence: last)
                                    ))
                                switch try await client.expectFrame() {
                                case .published(let sequence):
                                    #expect(sequence == last + 1)
                                    last = sequence
                                    won += 1
                                case .error(let error):
                                    #expect(error.code == .wrongLastSeq)
                                    last = try #require(Self.lastSeq(in: error.message))
                                case let other:
                                    throw TestFailure("unexpected \(other)")
                                }
                            }
                            return won
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(wins == writers * perWriter)
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            let info = try await client.info("ledger")
            #expect(info.lastSeq == UInt64(wins) && info.count == wins)
            await client.close()
        }
    }

    static func lastSeq(in message: String) -> UInt64? {
        guard let range = message.range(of: "last_seq=") else { return nil }
        return UInt64(message[range.upperBound...].prefix { $0.isNumber })
    }

    /// The event is committed (another connection sees it), then the daemon is killed
    /// before the publisher reads its acknowledgement: the retry after the restart is
    /// answered with the original sequence number, and the event is stored once.
    @Test func aProducersRetryAfterKill9BetweenCommitAndAckIsDeduplicated() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await TestDaemon.start(in: directory)
            let stamp = AppendConditions(producer: ProducerStamp(id: "billing", epoch: 4, sequence: 0))
            let original: UInt64 = try await withWireClient(first.socketPath) { watcher in
                try await watcher.subscribe("pay", sid: "w")
                return try await withWireClient(first.socketPath) { publisher in
                    try await publisher.send(.publishChecked(stream: "pay", payload: ByteBuffer(string: "charge 10"), checks: stamp))
                    let (sequence, _) = try #require(try await watcher.events(1).first)
                    #expect(await first.stop(SIGKILL) == SIGKILL, "killed before its acknowledgement was read")
                    return sequence
                }
            }
            let second = try await TestDaemon.start(in: directory)
            try await withWireClient(second.socketPath) { publisher in
                try await publisher.send(.publishChecked(stream: "pay", payload: ByteBuffer(string: "charge 10"), checks: stamp))
                #expect(try await publisher.expectFrame() == .published(sequence: original))
                // The old instance (a lower epoch) is fenced.
                try await publisher.send(
                    .publishChecked(
                        stream: "pay", payload: ByteBuffer(string: "zombie"),
                        checks: AppendConditions(producer: ProducerStamp(id: "billing", epoch: 3, sequence: 1))))
                guard case .error(let error) = try await publisher.expectFrame() else { throw TestFailure("a stale epoch must be refused") }
                #expect(error.code == .staleEpoch && error.message.contains("epoch=4"))
            }
            let client = try await ReplayClient.connect(to: second.socketPath)
            #expect(try await client.info("pay").count == 1)
            await client.close()
            await second.stop()
        }
    }

    /// An atomic send across two streams with one failing check stores nothing in either,
    /// and a subscriber of both sees only whole sends, each in one piece.
    @Test func atomicSendsAreAllOrNothingAndSeenWhole() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { watcher in
                try await watcher.subscribe("orders", sid: "o")
                try await withWireClient(daemon.socketPath) { client in
                    let send = { (expectOrders: UInt64?, tag: String) in
                        try await client.send(
                            .atomic([
                                AtomicEvent(stream: "orders", payload: ByteBuffer(string: "\(tag)-order"), expect: expectOrders),
                                AtomicEvent(stream: "stock", payload: ByteBuffer(string: "\(tag)-stock")),
                                AtomicEvent(stream: "orders", payload: ByteBuffer(string: "\(tag)-paid")),
                            ]))
                    }
                    try await send(0, "first")
                    #expect(try await client.expectFrame() == .publishedAll([1, 1, 2]))
                    try await send(0, "stale")  // orders is at 2 now
                    guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("expected a refusal") }
                    #expect(error.code == .wrongLastSeq && Self.lastSeq(in: error.message) == 2)
                    try await send(2, "second")
                    #expect(try await client.expectFrame() == .publishedAll([3, 2, 4]))
                }
                let seen = try await watcher.events(4)
                #expect(seen.map(\.1) == ["first-order", "first-paid", "second-order", "second-paid"])
            }
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            #expect(try await client.info("stock").count == 2, "the refused send stored nothing in stock either")
            await client.close()
        }
    }

    /// A malformed ATOMIC send is refused whole, and the connection goes on.
    @Test func anAtomicSendWithAnythingButPubIsRefusedWhole() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("ATOMIC 2\r\nPUB s 1\r\nx\r\nINFO s\r\nPING\r\n")
                guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("expected a refusal") }
                #expect(error.code == .badCommand && error.message.contains("only PUB"))
                #expect(try await client.expectFrame() == .pong)
                try await client.send(.info(stream: "s"))
                guard case .error(let unknown) = try await client.expectFrame() else { throw TestFailure("s must not exist") }
                #expect(unknown.code == .unknownStream)
            }
        }
    }

    /// A durable consumer acknowledges as it goes; after kill -9 and a restart it resumes
    /// right after its last acknowledged event: no gap, no duplicate.
    @Test func aDurableConsumerResumesAfterKill9WithNoGapAndNoDuplicate() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await TestDaemon.start(in: directory)
            try await withWireClient(first.socketPath) { client in
                _ = try await client.publish("jobs", (1...10).map { "job\($0)" })
                try await client.send(.subscribeDurable(stream: "jobs", sid: "d", start: .all, consumer: "worker"))
                #expect(try await client.expectFrame() == .ok)
                for (sequence, _) in try await client.events(6) {
                    try await client.send(.ack(sid: "d", sequence: sequence))
                    // Frames may interleave: read until this ACK's +OK.
                    while try await client.expectFrame() != .ok {}
                }
            }
            #expect(await first.stop(SIGKILL) == SIGKILL)
            let second = try await TestDaemon.start(in: directory)
            try await withWireClient(second.socketPath) { client in
                try await client.send(.subscribeDurable(stream: "jobs", sid: "again", start: .new, consumer: "worker"))
                #expect(try await client.expectFrame() == .ok)
                #expect(try await client.events(4).map(\.1) == ["job7", "job8", "job9", "job10"])
                try await client.send(.consumers(stream: "jobs"))
                guard case .list(let json) = try await client.expectFrame() else { throw TestFailure("expected +LIST") }
                let consumers = try JSONDecoder().decode([ConsumerDescription].self, from: Data(json.readableBytesView))
                #expect(consumers.map(\.name) == ["worker"] && consumers[0].ackedSeq == 6 && consumers[0].lag == 4)
            }
            await second.stop()
        }
    }

    /// A durable consumer whose position fell behind retention gets the usual GAP, then
    /// the retained events: capacity wins over unacknowledged events.
    @Test func aDurableConsumerBehindRetentionGetsAGap() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(.create(stream: "short", options: CreateOptions(capacity: .count(3))))
                #expect(try await client.expectFrame() == .ok)
                _ = try await client.publish("short", ["1", "2"])
                try await client.send(.subscribeDurable(stream: "short", sid: "d", start: .all, consumer: "slow"))
                #expect(try await client.expectFrame() == .ok)
                _ = try await client.events(2)
                try await client.send(.ack(sid: "d", sequence: 1))
                #expect(try await client.expectFrame() == .ok)
                try await client.send(.unsubscribe(sid: "d"))
                #expect(try await client.expectFrame() == .ok)
                _ = try await client.publish("short", ["3", "4", "5", "6"])  // keeps 4, 5, 6
                try await client.send(.subscribeDurable(stream: "short", sid: "again", start: .all, consumer: "slow"))
                #expect(try await client.expectFrame() == .ok)
                #expect(try await client.expectFrame() == .gap(stream: "short", sid: "again", from: 2, through: 3))
                #expect(try await client.events(3).map(\.1) == ["4", "5", "6"])
            }
        }
    }

    /// ACK of an unknown sid, of a plain subscription, beyond the last sequence, or
    /// backwards: a clear error each, and the position does not move.
    @Test func badAcknowledgementsAreClearErrorsAndChangeNothing() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("s", ["a", "b", "c"])
                try await client.subscribe("s", sid: "plain")
                _ = try await client.events(3)
                try await client.send(.subscribeDurable(stream: "s", sid: "d", start: .all, consumer: "c"))
                #expect(try await client.expectFrame() == .ok)
                _ = try await client.events(3)
                try await client.send(.ack(sid: "d", sequence: 2))
                #expect(try await client.expectFrame() == .ok)
                let refusals: [(ClientCommand, ReplayError.Code)] = [
                    (.ack(sid: "nobody", sequence: 1), .unknownSubscription),
                    (.ack(sid: "plain", sequence: 1), .invalidAck),
                    (.ack(sid: "d", sequence: 9), .invalidAck),
                    (.ack(sid: "d", sequence: 1), .invalidAck),
                    (.deleteConsumer(stream: "s", name: "ghost"), .unknownConsumer),
                ]
                for (command, code) in refusals {
                    try await client.send(command)
                    guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("\(command) must be refused") }
                    #expect(error.code == code, "\(command): \(error)")
                }
                try await client.send(.consumers(stream: "s"))
                guard case .list(let json) = try await client.expectFrame() else { throw TestFailure("expected +LIST") }
                #expect(try JSONDecoder().decode([ConsumerDescription].self, from: Data(json.readableBytesView)).map(\.ackedSeq) == [2])
            }
        }
    }
}
