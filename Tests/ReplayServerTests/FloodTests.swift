import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

/// Many clients, and clients that misbehave on purpose: each is answered or bounded, the
/// daemon's memory stays bounded, and other clients carry on.
@Suite("replayd: floods and limits", .timeLimit(.minutes(3)))
struct FloodTests {
    /// Opens `count` raw connections; each sends PING and must read PONG.
    static func pingFromRawConnections(_ socketPath: String, count: Int) throws -> [String] {
        var descriptors: [Int32] = []
        defer { for fd in descriptors { close(fd) } }
        for _ in 0..<count {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0, connectUnixSocket(fd, socketPath) else { throw TestFailure("connect failed: errno \(errno)") }
            descriptors.append(fd)
        }
        for fd in descriptors { _ = write(fd, "PING\r\n", 6) }
        var answers: [String] = []
        for fd in descriptors {
            var received = ""
            var buffer = [UInt8](repeating: 0, count: 512)
            while !received.contains("PONG\r\n") && !received.contains("-ERR") {
                let n = read(fd, &buffer, buffer.count)
                guard n > 0 else { break }
                received += String(decoding: buffer[0..<n], as: UTF8.self)
            }
            answers.append(received)
        }
        return answers
    }

    @Test func aThousandConcurrentConnectionsAreServedWithBoundedMemory() async throws {
        try await withDaemon { daemon in
            let baseline = daemon.residentBytes
            let socket = daemon.socketPath
            try await withWireClient(socket) { bystander in
                try await bystander.subscribe("s", sid: "b")
                let answers = try await blockingCall { try Self.pingFromRawConnections(socket, count: 1_000) }
                #expect(answers.filter { $0.contains("PONG") }.count == 1_000)
                #expect(
                    daemon.residentBytes - baseline < memoryBudget(100 << 20), "RSS grew by \((daemon.residentBytes - baseline) >> 20) MB for 1,000 connections"
                )
                let sequences = try await withWireClient(socket) { publisher in try await publisher.publish("s", ["after the flood"]) }
                #expect(sequences == [1])
                #expect(try await bystander.events(1).map(\.1) == ["after the flood"])
            }
        }
    }

    @Test func connectionsBeyondTheLimitGetAClearError() async throws {
        try await withDaemon(arguments: ["--max-connections", "20"]) { daemon in
            let socket = daemon.socketPath
            let answers = try await blockingCall { try Self.pingFromRawConnections(socket, count: 30) }
            #expect(answers.filter { $0.contains("PONG") }.count == 20)
            let refused = answers.filter { $0.contains("-ERR too_many_connections") }
            #expect(refused.count == 10)
            // Once they are gone, there is room again: the daemon frees each place when it
            // sees its connection close, a moment after the closes here.
            try await eventually("room again once the 30 are gone") {
                let answer = try? await withWireClient(socket) { client in
                    try await client.send(.ping)
                    return try await client.expectFrame()
                }
                return answer == .pong
            }
        }
    }

    /// The connection state machine under random command sequences: every command gets
    /// exactly one action, subscription ids stay consistent, and nothing traps.
    @Test(arguments: 0..<10 as Range<UInt64>)
    func connectionStateUnderRandomCommands(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var state = ConnectionStateProbe(maxSubscriptions: 5)
        var open: Set<String> = []
        for _ in 0..<2_000 {
            let sid = "s\(Int.random(in: 0..<8, using: &random))"
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                let accepted = state.subscribe(sid)
                #expect(accepted == (!open.contains(sid) && open.count < 5))
                if accepted { open.insert(sid) }
            case 1:
                let accepted = state.unsubscribe(sid)
                #expect(accepted == open.contains(sid))
                open.remove(sid)
            case 2:
                state.ended(sid)
                open.remove(sid)
            default:
                let answered = state.ping()
                #expect(answered)
            }
            #expect(state.subscriptions == open)
        }
    }
}
