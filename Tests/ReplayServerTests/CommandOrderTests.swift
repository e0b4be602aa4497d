import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

/// A connection's commands take effect in the order they were sent, even pipelined in
/// one write, whatever path each takes inside the daemon.
@Suite("replayd: command order", .timeLimit(.minutes(2)))
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
                    if case .event(_, "n", _, _, let payload) = frame {
                        #expect(String(buffer: payload) == "new")
                        sawEvent = true
                    }
                }
                #expect(sawEvent)
            }
        }
    }
}

@Suite("replayd: subscription ids", .timeLimit(.minutes(2)))
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
                    guard case .event(_, "a", let sequence, _, _) = try await client.expectFrame() else {
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
