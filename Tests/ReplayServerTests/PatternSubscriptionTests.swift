import NIOCore
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// `SUB <pattern> …`: every matching stream's events under one subscription id, streams
/// created later included, each stream in order.
@Suite("replayd: pattern subscriptions", .timeLimit(.minutes(5)))
struct PatternSubscriptionTests {
    /// Reads `count` events and returns them by stream, in arrival order within each.
    func eventsByStream(_ client: WireClient, _ count: Int, sid: String) async throws -> [String: [(UInt64, String)]] {
        var byStream: [String: [(UInt64, String)]] = [:]
        for _ in 0..<count {
            let frame = try await client.expectFrame()
            guard case .event(let stream, let frameSID, let sequence, _, let payload, _, _, _) = frame, frameSID == sid else {
                throw TestFailure("expected an event of \(sid), got \(frame)")
            }
            byStream[stream, default: []].append((sequence, String(buffer: payload)))
        }
        return byStream
    }

    func subscribe(_ client: WireClient, _ pattern: String, sid: String, start: StartPosition = .all) async throws {
        try await client.send(.subscribePattern(pattern: try StreamPattern.parse(pattern).get(), sid: sid, start: start))
        let reply = try await client.expectFrame()
        guard reply == .ok else { throw TestFailure("SUB \(pattern) answered \(reply)") }
    }

    @Test func deliversEveryMatchingStreamAndOnlyThose() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                _ = try await publisher.publish("orders/eu", ["e1", "e2"])
                _ = try await publisher.publish("orders/us", ["u1"])
                _ = try await publisher.publish("orders/eu/paris", ["deeper"])
                _ = try await publisher.publish("billing", ["other"])
                try await withWireClient(daemon.socketPath) { client in
                    try await subscribe(client, "orders/*", sid: "p")
                    let events = try await eventsByStream(client, 3, sid: "p")
                    #expect(events["orders/eu"]?.map(\.1) == ["e1", "e2"])
                    #expect(events["orders/us"]?.map(\.1) == ["u1"])
                    // Live events of a matching stream follow, and nothing of the others.
                    _ = try await publisher.publish("billing", ["still other"])
                    _ = try await publisher.publish("orders/eu/paris", ["still deeper"])
                    _ = try await publisher.publish("orders/us", ["u2"])
                    let live = try await eventsByStream(client, 1, sid: "p")
                    #expect(live["orders/us"]?.map(\.0) == [2])
                }
            }
        }
    }

    @Test func picksUpAStreamCreatedAfterTheSubFromItsFirstEvent() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                _ = try await publisher.publish("jobs/a", ["a1"])
                try await withWireClient(daemon.socketPath) { client in
                    // `new`: nothing of the streams matching now, everything of later ones.
                    try await subscribe(client, "jobs/**", sid: "w", start: .new)
                    _ = try await publisher.publish("jobs/b/1", ["b1", "b2", "b3"])
                    _ = try await publisher.publish("jobs/a", ["a2"])
                    let events = try await eventsByStream(client, 4, sid: "w")
                    #expect(events["jobs/b/1"]?.map(\.0) == [1, 2, 3])
                    #expect(events["jobs/b/1"]?.map(\.1) == ["b1", "b2", "b3"])
                    #expect(events["jobs/a"]?.map(\.1) == ["a2"])
                }
            }
        }
    }

    @Test func aStreamsEndEndsOnlyItsPartAndUnsubStopsTheRest() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { publisher in
                _ = try await publisher.publish("t/one", ["x"])
                _ = try await publisher.publish("t/two", ["y"])
                try await withWireClient(daemon.socketPath) { client in
                    try await subscribe(client, "t/*", sid: "s")
                    _ = try await eventsByStream(client, 2, sid: "s")
                    try await publisher.send(.complete(stream: "t/one"))
                    #expect(try await publisher.expectFrame() == .ok)
                    #expect(try await client.expectFrame() == .completed(stream: "t/one", sid: "s", lastSequence: 1))
                    _ = try await publisher.publish("t/two", ["z"])
                    #expect(try await eventsByStream(client, 1, sid: "s")["t/two"]?.map(\.1) == ["z"])
                    try await client.send(.unsubscribe(sid: "s"))
                    #expect(try await client.expectFrame() == .ok)
                    // The id is free again, and nothing more of the pattern comes.
                    _ = try await publisher.publish("t/three", ["after"])
                    try await client.subscribe("t/two", sid: "s", start: .new)
                    _ = try await publisher.publish("t/two", ["plain"])
                    #expect(try await client.events(1).map(\.1) == ["plain"])
                }
            }
        }
    }

    @Test func aBadPatternIsRefusedAndTheConnectionGoesOn() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("SUB orders/e* s1\r\nSUB orders/* s2 durable=c\r\nPING\r\n")
                guard case .error(let partial) = try await client.expectFrame() else { throw TestFailure("expected -ERR") }
                #expect(partial.code == .badCommand)
                #expect(partial.message.contains("whole segments"))
                guard case .error(let durable) = try await client.expectFrame() else { throw TestFailure("expected -ERR") }
                #expect(durable.message.contains("not a pattern"))
                #expect(try await client.expectFrame() == .pong)
            }
        }
    }
}
