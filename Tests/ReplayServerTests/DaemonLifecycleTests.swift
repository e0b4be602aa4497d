import Foundation
import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

@Suite("replayd: start-up and shutdown", .timeLimit(.minutes(3)))
struct DaemonLifecycleTests {
    @Test func startupLogsOneLineAndTheSocketIsPrivate() async throws {
        try await withDaemon { daemon in
            let line = try #require(daemon.log.split(separator: "\n").first { $0.contains("ready") })
            for part in [
                "replayd \(ReplayVersion.current)", "socket=\(daemon.socketPath)", "database=\(daemon.databasePath)", "durability=full", "streams=0",
                // replayd's allocator, linked in place of the C library's (MemoryAllocator).
                "allocator=jemalloc 5.",
            ] {
                #expect(line.contains(part), "start-up line lacks \(part): \(line)")
            }
            let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socketPath)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }
    }

    @Test func socketModeCanBeWidenedForAGroup() async throws {
        try await withDaemon(arguments: ["--socket-mode", "0660"]) { daemon in
            let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socketPath)
            #expect((attributes[.posixPermissions] as? Int) == 0o660)
        }
    }

    @Test func aSecondDaemonOnTheSameSocketIsRefusedAndTheFirstKeepsServing() async throws {
        try await withDaemon { daemon in
            let second = try await TestDaemon.launch(in: daemon.directory, database: "other.sqlite", socket: daemon.socketPath)
            #expect(await second.waitForExit() == 1)
            #expect(second.log.contains("another replayd is already running on \(daemon.socketPath)"))
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(.ping)
                #expect(try await client.expectFrame() == .pong)
            }
        }
    }

    @Test func aSecondDaemonOnTheSameDatabaseIsRefused() async throws {
        try await withDaemon { daemon in
            let second = try await TestDaemon.launch(in: daemon.directory, socket: daemon.directory + "/other.sock")
            #expect(await second.waitForExit() == 1)
            #expect(second.log.contains("is in use by another replay process (pid \(daemon.pid))"))
        }
    }

    @Test func aStaleSocketLeftByACrashIsReplaced() async throws {
        try await withTemporaryDirectory { directory in
            let crashed = try await TestDaemon.start(in: directory)
            try await withWireClient(crashed.socketPath) { client in
                _ = try await client.publish("s", ["before the crash"])
            }
            await crashed.stop(SIGKILL)
            #expect(FileManager.default.fileExists(atPath: crashed.socketPath), "SIGKILL leaves the socket file")
            let restarted = try await TestDaemon.start(in: directory)
            try await withWireClient(restarted.socketPath) { client in
                try await client.subscribe("s", sid: "a")
                #expect(try await client.events(1).map(\.1) == ["before the crash"])
            }
            await restarted.stop()
        }
    }

    /// SIGTERM: publishes already sent are committed and acknowledged, subscribers are
    /// closed, the socket file is removed, exit status 0.
    @Test func sigtermDrainsAcknowledgesAndRemovesTheSocket() async throws {
        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory)
            try await withWireClient(daemon.socketPath) { subscriber in
                try await subscriber.subscribe("s", sid: "live")
                try await withWireClient(daemon.socketPath) { publisher in
                    var buffer = ByteBuffer()
                    for n in 1...2_000 { ClientCommand.publish(stream: "s", payload: ByteBuffer(string: "\(n)")).write(into: &buffer) }
                    try await publisher.send(buffer)
                    // Wait for the first acknowledgement so the commands are being processed.
                    guard case .published = try await publisher.expectFrame() else { throw TestFailure("expected +OK") }
                    daemon.signal(SIGTERM)
                    let rest = try await publisher.framesUntilClose()
                    let acknowledged = 1 + rest.filter { if case .published = $0 { true } else { false } }.count
                    let refused = rest.filter { if case .error(let e) = $0 { e.code == .shuttingDown } else { false } }.count
                    #expect(acknowledged + refused == 2_000, "every PUB is answered: acknowledged or refused")
                    #expect(await daemon.waitForExit() == 0)
                    #expect(!FileManager.default.fileExists(atPath: daemon.socketPath))

                    // Whatever was acknowledged is stored.
                    let again = try await TestDaemon.start(in: directory)
                    try await withWireClient(again.socketPath) { check in
                        try await check.send(.info(stream: "s"))
                        guard case .info(let json) = try await check.expectFrame() else { throw TestFailure("expected +INFO") }
                        let info = try JSONDecoder().decode(StreamDescription.self, from: Data(json.readableBytesView))
                        #expect(info.lastSeq == UInt64(acknowledged))
                    }
                    await again.stop()
                }
                let closing = try await subscriber.framesUntilClose()
                #expect(closing.allSatisfy { if case .event = $0 { true } else { false } }, "the subscriber is closed cleanly")
            }
        }
    }
}
