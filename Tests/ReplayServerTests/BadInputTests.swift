import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

@Suite("replayd: bad input", .timeLimit(.minutes(3)))
struct BadInputTests {
    @Test func garbageUnknownVerbsAndOversizePayloadsGetErrorsAndTheConnectionGoesOn() async throws {
        try await withDaemon(arguments: ["--max-payload", "16"]) { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(
                    "HELLO there\r\n\u{1}\u{2}\u{3}\r\nPUB\r\nPUB s -5\r\nSUB s\r\nPUB s 17\r\n0123456789abcdefg\r\nPUB s 2\r\nok\r\nPING\r\n")
                let frames = try await client.frames(7)
                let codes = frames.compactMap { if case .error(let e) = $0 { e.code } else { nil } }
                #expect(codes == [.unknownCommand, .unknownCommand, .badCommand, .badCommand, .badCommand, .payloadTooLarge])
                #expect(frames.last == .published(sequence: 1))
                #expect(try await client.expectFrame() == .pong)
            }
        }
    }

    @Test func anUnrecoverableFrameIsAnsweredThenClosedWhileOtherClientsCarryOn() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { bystander in
                try await bystander.subscribe("s", sid: "b")
                try await withWireClient(daemon.socketPath) { broken in
                    try await broken.send("PUB s 3\r\nabcdef\r\n")
                    let frames = try await broken.framesUntilClose()
                    guard case .error(let error) = frames.first else { throw TestFailure("expected an error, got \(frames)") }
                    #expect(error.code == .badFrame)
                    #expect(frames.count == 1)
                }
                try await withWireClient(daemon.socketPath) { long in
                    try await long.send(String(repeating: "X", count: 10_000))
                    let frames = try await long.framesUntilClose()
                    guard case .error(let error) = frames.first else { throw TestFailure("expected an error, got \(frames)") }
                    #expect(error.code == .lineTooLong)
                }
                let sequences = try await withWireClient(daemon.socketPath) { publisher in
                    try await publisher.publish("s", ["still fine"])
                }
                #expect(sequences == [1])
                #expect(try await bystander.events(1).map(\.1) == ["still fine"])
            }
        }
    }

    /// A client that disappears in the middle of a frame: the partial command is dropped,
    /// the complete ones before it were acted on, and the daemon carries on.
    @Test func aClientDisappearingMidFrameLosesOnlyThePartialCommand() async throws {
        try await withDaemon { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.send("PUB s 4\r\nkept\r\nPUB s 100\r\nonly part of it")
                guard case .published(1) = try await client.expectFrame() else { throw TestFailure("expected +OK 1") }
            }
            try await withWireClient(daemon.socketPath) { client in
                try await client.subscribe("s", sid: "x")
                #expect(try await client.events(1).map(\.1) == ["kept"])
            }
            try await withWireClient(daemon.socketPath) { client in
                let sequences = try await client.publish("s", ["next"])
                #expect(sequences == [2])
            }
            #expect(daemon.isRunning)
        }
    }

    @Test func subscriptionLimitsAndBadStreamNames() async throws {
        try await withDaemon(arguments: ["--max-subscriptions", "2"]) { daemon in
            try await withWireClient(daemon.socketPath) { client in
                try await client.subscribe("a", sid: "1")
                try await client.subscribe("b", sid: "2")
                try await client.send(.subscribe(stream: "c", sid: "3", start: .all))
                guard case .error(let limit) = try await client.expectFrame() else { throw TestFailure("expected an error") }
                #expect(limit.code == .tooManySubscriptions)
                try await client.send(.unsubscribe(sid: "1"))
                #expect(try await client.expectFrame() == .ok)
                try await client.send(.subscribe(stream: "bad//name", sid: "3", start: .all))
                guard case .error(let name) = try await client.expectFrame() else { throw TestFailure("expected an error") }
                #expect(name.code == .invalidName)
                try await client.subscribe("c", sid: "3")
            }
        }
    }
}
