import ArgumentParser
import ReplayClient

struct Delete: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(abstract: "Delete a stream and its events.")
    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @OptionGroup var target: StreamArgument

    func run(with client: ReplayClient) async throws { try await client.delete(stream) }
}

struct Complete: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(abstract: "End a stream successfully; subscribers get COMPLETED, publishing is refused.")
    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @OptionGroup var target: StreamArgument

    func run(with client: ReplayClient) async throws { try await client.complete(stream) }
}

struct Fail: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(abstract: "End a stream with a failure message; subscribers get FAILED.")
    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @OptionGroup var target: StreamArgument
    @Argument(help: "Why it failed.") var message: String

    func run(with client: ReplayClient) async throws { try await client.fail(stream, message: message) }
}

struct Reset: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(abstract: "Clear a stream's terminal event so it can be published to again.")
    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @OptionGroup var target: StreamArgument
    @Flag(help: "Also remove its history (sequence numbers still go on).") var dropHistory = false

    func run(with client: ReplayClient) async throws { try await client.reset(stream, keepHistory: !dropHistory) }
}

struct Ping: DaemonCommand {
    static let configuration = CommandConfiguration(abstract: "Check that replayd answers; prints PONG.")
    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    func run(with client: ReplayClient) async throws {
        try await client.ping()
        print("PONG")
    }
}
