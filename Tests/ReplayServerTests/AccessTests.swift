import Foundation
import NIOCore
import ReplayClient
import ReplayProtocol
import ReplayTesting
import Testing

/// Who may talk to the socket, and who may make the daemon run commands.
@Suite("replayd: access", .timeLimit(.minutes(5)))
struct AccessTests {
    @Test func peersOutsideTheAllowedUsersAndGroupsAreRefused() async throws {
        let me = getuid()
        let myGroup = getgid()
        try await withDaemon(arguments: ["--allow-uid", "\(me &+ 4242)", "--allow-gid", "\(myGroup &+ 4242)"]) { daemon in
            let frames = try await withWireClient(daemon.socketPath) { client in try await client.framesUntilClose() }
            guard case .error(let error) = frames.first else { throw TestFailure("expected a refusal, got \(frames)") }
            #expect(error.code == .forbidden)
            #expect(error.message.contains("uid \(me), gid \(myGroup) may not use this replayd"))
            #expect(daemon.log.contains("connection refused"))
        }
        for allowed in [["--allow-uid", "\(me)"], ["--allow-gid", "\(myGroup)"]] {
            try await withDaemon(arguments: allowed) { daemon in
                try await withWireClient(daemon.socketPath) { client in
                    try await client.send(.ping)
                    #expect(try await client.expectFrame() == .pong)
                }
            }
        }
    }

    @Test func sourcesCanBeRefusedOverTheSocketAndDeclaredInAFile() async throws {
        try await withTemporaryDirectory { directory in
            let declarations = directory + "/streams.json"
            try Data(
                #"""
                {"streams": [
                  {"name": "declared", "capacity": -1, "source": "echo from the config file", "connect": "eager"},
                  {"name": "plain", "capacity": 5},
                  {"name": "jobs", "capacity": 5, "keep_unacked": 50}
                ]}
                """#.utf8
            ).write(to: URL(fileURLWithPath: declarations))
            let daemon = try await TestDaemon.start(in: directory, arguments: ["--no-socket-sources", "--config", declarations])
            try await withWireClient(daemon.socketPath) { client in
                try await client.send(.create(stream: "sneaky", options: CreateOptions(source: "id", connect: "eager")))
                guard case .error(let error) = try await client.expectFrame() else { throw TestFailure("expected a refusal") }
                #expect(error.code == .forbidden)
                try await client.send(.create(stream: "fine", options: CreateOptions(capacity: .count(3))))
                #expect(try await client.expectFrame() == .ok, "plain streams can still be created")
                try await client.subscribe("declared", sid: "d")
                #expect(try await client.events(1).map(\.1) == ["from the config file"])
            }
            // Every option of `create` can be declared, `keep_unacked` included.
            let replay = try await ReplayClient.connect(to: daemon.socketPath)
            #expect(try await replay.info("jobs").keepUnacked == 50)
            await replay.close()
            await daemon.stop()

            // A declaration that contradicts the database stops the start, with the reason.
            try Data(#"{"streams": [{"name": "plain", "capacity": 7}]}"#.utf8).write(to: URL(fileURLWithPath: declarations))
            let refused = try await TestDaemon.launch(in: directory, arguments: ["--config", declarations])
            #expect(await refused.waitForExit() == 1)
            #expect(refused.log.contains("stream plain exists with other settings than its declaration"))
        }
    }
}
