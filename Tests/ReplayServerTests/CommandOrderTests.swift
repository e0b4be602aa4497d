import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

/// A connection's commands take effect in the order they were sent, even pipelined in
/// one write, whatever path each takes inside the daemon.
@Suite("replayd: command order", .timeLimit(.minutes(5)))
struct CommandOrderTests {
    @Test func aPublishAfterCompleteIsRefused() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("PUB s 1\r\na\r\nCOMPLETE s\r\nPUB s 1\r\nb\r\n")
                let frames = try await client.frames(3)
                #expect(frames[0] == .published(sequence: 1))
                #expect(frames[1] == .ok)
                guard case .error(let error) = frames[2] else { throw TestFailure("expected an error, got \(frames[2])") }
                #expect(error.code == .terminated)
            }
        }
    }

    @Test func infoSeesThePublishesBeforeIt() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("PUB s 1\r\na\r\nPUB s 1\r\nb\r\nINFO s\r\n")
                let frames = try await client.frames(3)
                guard case .info(let json) = frames[2] else { throw TestFailure("expected +INFO, got \(frames[2])") }
                let info = try JSONDecoder().decode(StreamDescription.self, from: Data(json.readableBytesView))
                #expect(info.lastSeq == 2)
            }
        }
    }

    @Test(arguments: ["existing", "created by the SUB"])
    func aSubscriptionForNewEventsSeesThePublishAfterIt(stream: String) async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                if stream == "existing" { _ = try await client.publish("s", ["old"]) }
                try await client.send("SUB s n new\r\nPUB s 3\r\nnew\r\n")
                var sawEvent = false
                for frame in try await client.frames(3) {
                    if case .event(_, "n", _, _, let payload, _, _, _) = frame {
                        #expect(String(buffer: payload) == "new")
                        sawEvent = true
                    }
                }
                #expect(sawEvent)
            }
        }
    }
}

extension CommandOrderTests {
    /// A durable consumer's or a group's first `since=` start is fixed by the writer, in
    /// command order: the PUB before it is before its start (it is older than the time),
    /// the PUB after it is after, and the position is there for the next command. (Before,
    /// the time was looked up on the read pool, which could run before the first PUB was
    /// committed or after the second.)
    @Test(arguments: ["durable=c", "group=g"])
    func aSinceStartOnFirstUseIsInCommandOrder(kind: String) async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                _ = try await client.publish("s", ["old"])
                // A time in the future: no stored event is at or after it.
                let future = String(format: "%.3f", Date().timeIntervalSince1970 + 3600)
                try await client.send("PUB s 6\r\nbefore\r\nSUB s w since=\(future) \(kind)\r\nPUB s 5\r\nafter\r\nCONSUMERS s\r\nGROUPS s\r\n")
                var events: [String] = []
                var replies: [ServerFrame] = []
                while replies.count < 5 || events.isEmpty {
                    let frame = try await client.expectFrame()
                    if case .event(_, "w", _, _, let payload, _, _, _) = frame { events.append(String(buffer: payload)) } else { replies.append(frame) }
                }
                #expect(replies[0] == .published(sequence: 2) && replies[1] == .ok && replies[2] == .published(sequence: 3))
                #expect(events == ["after"])
                if kind.hasPrefix("durable"), case .list(let json) = replies[3] {
                    let consumers = try JSONDecoder().decode([ConsumerDescription].self, from: Data(json.readableBytesView))
                    #expect(consumers.map(\.name) == ["c"])
                    #expect(consumers.first?.ackedSeq == 2, "its position, after 'before', is known to the next command")
                }
                if kind.hasPrefix("group"), case .list(let json) = replies[4] {
                    let groups = try JSONDecoder().decode([GroupDescription].self, from: Data(json.readableBytesView))
                    #expect(groups.map(\.name) == ["g"])
                }
            }
        }
    }
}

@Suite("replayd: subscription ids", .timeLimit(.minutes(5)))
struct SubscriptionIdTests {
    /// UNSUB then SUB with the same sid: the new subscription is not undone when the old
    /// one's task finishes.
    @Test func aSidCanBeReusedAfterUnsubscribe() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                for round in 1...20 {
                    try await client.send("SUB s a new\r\nUNSUB a\r\nSUB s a new\r\n")
                    #expect(try await client.frames(3) == [.ok, .ok, .ok])
                    let sequences = try await withWireClient(daemon.socketPath) { publisher in
                        try await publisher.publish("s", ["round \(round)"])
                    }
                    guard case .event(_, "a", let sequence, _, _, _, _, _) = try await client.expectFrame() else {
                        throw TestFailure("the reused sid got no event")
                    }
                    #expect([sequence] == sequences)
                    try await client.send(.unsubscribe(sid: "a"))
                    #expect(try await client.expectFrame() == .ok, "the reused sid is still registered")
                }
            }
        }
    }
}
