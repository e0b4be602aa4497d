import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol
import ReplayTesting
import Testing

/// A publisher's W3C `traceparent` travels with its event: stored in the row, given back
/// on every read of the socket (live, from the log, to a group's member, into a dead-letter
/// stream), on both stores.
@Suite("replayd: trace context with events", .timeLimit(.minutes(5)))
struct TraceContextTests {
    static let traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    static let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"

    @Test func aTracedPublishIsGivenBackLiveFromTheLogAndInTheRow() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory)
            try await withWireClient(daemon.socketPath) { client in
                try await client.subscribe("orders", sid: "live")
                try await client.send("PUB orders trace=\(Self.traced) 5\r\nfirst\r\nPUB orders 6\r\nsecond\r\n")
                let frames = try await client.frames(4)
                #expect(frames.contains(.published(sequence: 1)) && frames.contains(.published(sequence: 2)))
                #expect(frames.events == [TracedEvent(1, "first", Self.traced), TracedEvent(2, "second", nil)])
            }
            #expect(await daemon.stop() == 0)
            let rows = try await runProgram(
                "/usr/bin/env", ["sqlite3", directory + "/replay.sqlite", "SELECT seq, payload, quote(traceparent) FROM events ORDER BY seq"])
            #expect(rows.stdout == "1|first|'\(Self.traced)'\n2|second|NULL\n", "the row holds it, and the view shows it")
            let again = try await TestDaemon.start(in: directory)
            defer { Task { await again.stop() } }
            try await withWireClient(again.socketPath) { client in
                try await client.send(.subscribe(stream: "orders", sid: "log", start: .all))
                #expect(try await client.frames(3).events == [TracedEvent(1, "first", Self.traced), TracedEvent(2, "second", nil)])
            }
        }
    }

    @Test func anAtomicSendCarriesEachEventsOwn() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("ATOMIC 2\r\nPUB a trace=\(Self.traced) 1\r\nx\r\nPUB b trace=\(Self.other) 1\r\ny\r\n")
                #expect(try await client.expectFrame() == .publishedAll([1, 1]))
                try await client.send(.subscribe(stream: "b", sid: "s", start: .all))
                #expect(try await client.frames(2).events == [TracedEvent(1, "y", Self.other)])
            }
        }
    }

    @Test func aMalformedTraceparentIsRefusedAndNothingIsStored() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                for bad in ["00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "junk"] {
                    try await client.send("PUB orders trace=\(bad) 1\r\nx\r\n")
                    guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("\(bad) was accepted") }
                    #expect(error.code == .badCommand && error.message.contains("W3C traceparent"), "\(error)")
                }
                #expect(try await client.publish("orders", ["ok"]) == [1], "nothing was stored before it")
            }
        }
    }

    @Test func aGroupMemberGetsItAndTheDeadLetterCopyKeepsIt() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("PUB jobs trace=\(Self.traced) 3\r\njob\r\n")
                #expect(try await client.expectFrame() == .published(sequence: 1))
                try await client.send(
                    .subscribeGroup(stream: "jobs", sid: "w", start: .all, options: GroupOptions(group: "g", maxDeliver: 1, deadLetter: "dead")))
                let handedOut = try await client.frames(2)
                #expect(handedOut.events == [TracedEvent(1, "job", Self.traced)])
                try await client.send(.nack(sid: "w", sequence: 1))
                #expect(try await client.expectFrame() == .ok)
                try await client.send(.subscribe(stream: "dead", sid: "d", start: .all))
                #expect(try await client.frames(2).events == [TracedEvent(1, "job", Self.traced)])
            }
        }
    }

    @Test func aDerivedStreamsOutputsContinueTheirInputsTraces() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                let definition = #"{"inputs": ["orders"], "program": "select(.n > 1) | .n * 10"}"#
                try await client.send("DERIVE big \(definition.utf8.count)\r\n\(definition)\r\n")
                #expect(try await client.expectFrame() == .ok)
                try await client.send(
                    "PUB orders trace=\(Self.traced) 7\r\n{\"n\":1}\r\nPUB orders trace=\(Self.other) 7\r\n{\"n\":2}\r\nPUB orders 7\r\n{\"n\":3}\r\n")
                _ = try await client.frames(3)
                try await client.send(.subscribe(stream: "big", sid: "d", start: .all))
                #expect(try await client.frames(3).events == [TracedEvent(1, "20", Self.other), TracedEvent(2, "30", nil)])
            }
        }
    }

    @Test func onPostgreSQLItIsStoredAndReadBack() async throws {
        try await TestPostgres.withDatabase { url in
            try await withDaemon(database: url) { daemon in
                try await withWireClient(daemon.socketPath) { client in
                    try await client.send("PUB orders 1\r\na\r\nPUB orders trace=\(Self.traced) 1\r\nb\r\nPUB orders 1\r\nc\r\n")
                    _ = try await client.frames(3)
                    // From the log: the page PostgreSQL packs carries each event's trace context.
                    try await client.send(.subscribe(stream: "orders", sid: "s", start: .all))
                    #expect(
                        try await client.frames(4).events == [
                            TracedEvent(1, "a", nil), TracedEvent(2, "b", Self.traced), TracedEvent(3, "c", nil),
                        ])
                }
            }
            #expect(try await TestPostgres.psql(url, "SELECT seq, coalesce(traceparent, '-') FROM events ORDER BY seq") == "1|-\n2|\(Self.traced)\n3|-")
        }
    }
}

/// An event as these tests compare it.
struct TracedEvent: Equatable, CustomStringConvertible {
    let sequence: UInt64
    let payload: String
    let traceParent: String?

    init(_ sequence: UInt64, _ payload: String, _ traceParent: String?) {
        self.sequence = sequence
        self.payload = payload
        self.traceParent = traceParent
    }

    var description: String { "\(sequence):\(payload):\(traceParent ?? "-")" }
}

extension WireClient {
    /// The next `count` frames, whatever they are.
    func frames(_ count: Int) async throws -> [ServerFrame] {
        var frames: [ServerFrame] = []
        for _ in 0..<count { frames.append(try await expectFrame()) }
        return frames
    }
}

extension [ServerFrame] {
    /// The events among the frames, in order.
    var events: [TracedEvent] {
        compactMap { frame in
            guard case .event(_, _, let sequence, _, let payload, let trace, _, _) = frame else { return nil }
            return TracedEvent(sequence, String(buffer: payload), trace)
        }
    }
}
