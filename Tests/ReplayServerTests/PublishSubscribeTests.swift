import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

@Suite("replayd: publish and subscribe", .timeLimit(.minutes(5)))
struct PublishSubscribeTests {
    @Test func roundTripAndHello() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                #expect(try await client.publish("orders", [#"{"id":1}"#, #"{"id":2}"#]) == [1, 2])
                try await client.subscribe("orders", sid: "s1")
                let events = try await client.events(2)
                #expect(events.map(\.0) == [1, 2])
                #expect(events.map(\.1) == [#"{"id":1}"#, #"{"id":2}"#])
                #expect(client.hello == .hello(version: ReplayVersion.current, maxPayload: 1 << 20))
                try await client.send(.ping)
                #expect(try await client.expectFrame() == .pong)
            }
        }
    }

    @Test func restartKeepsHistoryAndSequence() async throws {
        try await withTemporaryDirectory { directory in
            let first = try await TestDaemon.start(in: directory)
            let sequences = try await withWireClient(first.socketPath) { client in
                try await client.publish("log", ["a", "b", "c"])
            }
            #expect(sequences == [1, 2, 3])
            #expect(await first.stop() == 0)
            let second = try await TestDaemon.start(in: directory)
            defer { Task { await second.stop() } }
            try await withWireClient(second.socketPath) { client in
                try await client.subscribe("log", sid: "x")
                #expect(try await client.events(3).map(\.1) == ["a", "b", "c"])
                let next = try await withWireClient(second.socketPath) { publisher in
                    try await publisher.publish("log", ["d"])
                }
                #expect(next == [4])
                #expect(try await client.events(1).map(\.0) == [4])
            }
            await second.stop()
        }
    }

    @Test func hundredThousandPipelinedPublishesAreAcknowledgedInOrder() async throws {
        try await withDaemon(arguments: ["--sync", "normal"]) { daemon in
            try await withWireClient(daemon.socketPath) { client in
                let total = 100_000
                // Send everything in large writes while acknowledgements come back.
                let sequences = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                    group.addTask {
                        var acks: [UInt64] = []
                        acks.reserveCapacity(total)
                        for _ in 0..<total {
                            guard case .published(let sequence) = try await client.expectFrame() else { throw TestFailure("expected +OK") }
                            acks.append(sequence)
                        }
                        return acks
                    }
                    var buffer = ByteBuffer()
                    for n in 0..<total {
                        ClientCommand.publish(stream: "bulk", payload: ByteBuffer(string: "event-\(n)")).write(into: &buffer)
                        if buffer.readableBytes > 64 * 1024 {
                            try await client.send(buffer)
                            buffer.clear()
                        }
                    }
                    try await client.send(buffer)
                    return try await group.next()!
                }
                #expect(sequences == Array(1...UInt64(total)))
            }
        }
    }

    @Test func fourConcurrentPublishersGetUniqueContiguousSequences() async throws {
        try await withDaemon { daemon in
            let all = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                for publisher in 0..<4 {
                    group.addTask {
                        try await withWireClient(daemon.socketPath) { client in
                            try await client.publish("shared", (0..<500).map { "p\(publisher)-\($0)" })
                        }
                    }
                }
                var all: [UInt64] = []
                for try await part in group {
                    #expect(part == part.sorted(), "one connection's acks come back in publish order")
                    all += part
                }
                return all
            }
            #expect(all.sorted() == Array(1...2000))
        }
    }

    /// A subscriber catching up from the store while publishes keep arriving sees every
    /// event once, in order: the switch from catch-up to live has no gap or duplicate.
    @Test func catchUpRacingLivePublishesHasNoGapNorDuplicate() async throws {
        try await withDaemon(arguments: ["--default-capacity", "unlimited", "--sync", "normal"]) { daemon in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("race", (1...20_000).map { "e\($0)" })
            }
            let total = 40_000
            let received = try await withThrowingTaskGroup(of: [UInt64].self) { group in
                group.addTask {
                    try await withWireClient(daemon.socketPath) { client in
                        _ = try await client.publish("race", (20_001...total).map { "e\($0)" })
                        return []
                    }
                }
                group.addTask {
                    try await withWireClient(daemon.socketPath) { client in
                        try await client.subscribe("race", sid: "r")
                        return try await client.events(total).map(\.0)
                    }
                }
                var received: [UInt64] = []
                for try await part in group where !part.isEmpty { received = part }
                return received
            }
            #expect(received == Array(1...UInt64(total)))
        }
    }

    /// Live subscribers get payloads on both sides of the sharing threshold byte for byte:
    /// small ones copied into each frame, large ones (one shared buffer) after a line of
    /// their own.
    @Test func liveSubscribersGetSmallAndSharedLargePayloadsIntact() async throws {
        try await withDaemon { daemon in
            let sizes = [0, 1, 511, 512, 513, 4096, 70_000]
            let payloads = sizes.enumerated().map { index, size in
                String((0..<size).map { Character(UnicodeScalar(UInt8(97 + ($0 + index) % 26))) })
            }
            try await withWireClient(daemon.socketPath) { first in
                try await withWireClient(daemon.socketPath) { second in
                    try await first.subscribe("shared", sid: "a", start: .new)
                    try await second.subscribe("shared", sid: "b", start: .new)
                    let sequences = try await withWireClient(daemon.socketPath) { publisher in
                        try await publisher.publish("shared", payloads)
                    }
                    #expect(sequences == Array(1...UInt64(sizes.count)))
                    for client in [first, second] {
                        let events = try await client.events(sizes.count)
                        #expect(events.map(\.0) == sequences)
                        #expect(events.map(\.1) == payloads)
                    }
                }
            }
        }
    }

    @Test func everyStartPosition() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(.create(stream: "pos", options: CreateOptions(capacity: .count(5))))
                #expect(try await client.expectFrame() == .ok)
                _ = try await client.publish("pos", (1...8).map { "e\($0)" })
                let marker = Date().timeIntervalSince1970

                try await client.subscribe("pos", sid: "all")
                #expect(try await client.events(5).map(\.0) == [4, 5, 6, 7, 8], "all: the retained window (capacity 5)")
                try await client.subscribe("pos", sid: "from6", start: .from(6))
                #expect(try await client.events(3).map(\.0) == [6, 7, 8])
                try await client.subscribe("pos", sid: "last2", start: .last(2))
                #expect(try await client.events(2).map(\.0) == [7, 8])
                try await client.subscribe("pos", sid: "new", start: .new)
                try await client.subscribe("pos", sid: "since", start: .since(marker + 3600))

                // A position that fell out of retention is reported as a gap first.
                try await client.subscribe("pos", sid: "old", start: .from(1))
                #expect(try await client.expectFrame() == .gap(stream: "pos", sid: "old", from: 1, through: 3))
                #expect(try await client.events(5).map(\.0) == [4, 5, 6, 7, 8])

                // One live event reaches every subscription exactly once.
                try await client.send(.publish(stream: "pos", payload: ByteBuffer(string: "e9")))
                var sids: [String] = []
                for _ in 0..<7 {
                    switch try await client.expectFrame() {
                    case .event(_, let sid, 9, _, _, _, _, _): sids.append(sid)
                    case .published(9): continue  // the acknowledgement, in any place among them
                    case let other: throw TestFailure("expected event 9 or its acknowledgement, got \(other)")
                    }
                }
                #expect(sids.sorted() == ["all", "from6", "last2", "new", "old", "since"])
            }
        }
    }

    @Test func terminalEventsAreReplayedAfterTheValues() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("job", ["step 1", "step 2"])
                try await client.send(.fail(stream: "job", message: "exit status 3"))
                #expect(try await client.expectFrame() == .ok)
                try await client.send(.publish(stream: "job", payload: ByteBuffer(string: "late")))
                guard case .error(let refused) = try await client.expectFrame() else { throw TestFailure("expected an error") }
                #expect(refused.code == .terminated)

                try await client.subscribe("job", sid: "j")
                #expect(try await client.events(2).map(\.1) == ["step 1", "step 2"])
                #expect(try await client.expectFrame() == .failed(stream: "job", sid: "j", lastSequence: 2, message: "exit status 3"))

                _ = try await client.publish("ok", ["x"])
                try await client.subscribe("ok", sid: "live")
                _ = try await client.events(1)
                try await client.send(.complete(stream: "ok"))
                let frames = try await client.frames(2)
                #expect(frames.contains(.ok))
                #expect(frames.contains(.completed(stream: "ok", sid: "live", lastSequence: 1)))
            }
        }
    }

    @Test func adminCommands() async throws {
        try await withDaemon(arguments: ["--no-auto-create"]) { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(.publish(stream: "missing", payload: ByteBuffer(string: "x")))
                guard case .error(let unknown) = try await client.expectFrame() else { throw TestFailure("expected an error") }
                #expect(unknown.code == .unknownStream)

                try await client.send(.create(stream: "a", options: CreateOptions(capacity: .unlimited, maxBytes: 1000, maxAge: 60)))
                #expect(try await client.expectFrame() == .ok)
                _ = try await client.publish("a", ["one", "two"])
                try await client.send(.info(stream: "a"))
                guard case .info(let json) = try await client.expectFrame() else { throw TestFailure("expected +INFO") }
                let info = try JSONDecoder().decode(StreamDescription.self, from: Data(json.readableBytesView))
                #expect(info.name == "a" && info.capacity == nil && info.maxBytes == 1000 && info.maxAge == 60)
                #expect(info.lastSeq == 2 && info.count == 2 && info.bytes == 6 && info.terminal == nil)

                try await client.send(.list)
                guard case .list(let listJSON) = try await client.expectFrame() else { throw TestFailure("expected +LIST") }
                let list = try JSONDecoder().decode([StreamDescription].self, from: Data(listJSON.readableBytesView))
                #expect(list.map(\.name) == ["a"])

                try await client.send(.delete(stream: "a"))
                #expect(try await client.expectFrame() == .ok)
                try await client.send(.info(stream: "a"))
                guard case .error(let gone) = try await client.expectFrame() else { throw TestFailure("expected an error") }
                #expect(gone.code == .unknownStream)
            }
        }
    }
}
