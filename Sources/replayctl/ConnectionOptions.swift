import ArgumentParser
import Foundation
import ReplayClient

/// `--socket`, accepted by the root command and by every subcommand.
struct ConnectionOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The daemon's socket.", valueName: "path"))
    var socket: String?
}

/// Exit statuses, as documented in `replayctl --help`.
enum Exit {
    static let refused = ExitCode(1)
    static let streamFailed = ExitCode(2)
    static let notRunning = ExitCode(3)
    static let brokenChain = ExitCode(4)
}

/// A subcommand that talks to the daemon: what each does to reach it (not the wire
/// protocol's `ClientCommand`, which is what it sends).
protocol DaemonCommand: AsyncParsableCommand {
    var connection: ConnectionOptions { get }
    var root: Replayctl { get }
    func run(with client: ReplayClient) async throws
}

extension DaemonCommand {
    var socketPath: String {
        connection.socket ?? root.connection.socket ?? ReplayClient.defaultSocketPath
    }

    func run() async throws {
        let client: ReplayClient
        do {
            client = try await ReplayClient.connect(to: socketPath)
        } catch let error as ReplayClientError {
            printError("replayctl: \(error)")
            throw Exit.notRunning
        }
        defer { Task { await client.close() } }
        do {
            try await run(with: client)
        } catch let error as ReplayClientError {
            printError("replayctl: \(error)")
            switch error {
            case .streamFailed: throw Exit.streamFailed
            case .daemonNotRunning: throw Exit.notRunning
            default: throw Exit.refused
            }
        }
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Writes to standard output without buffering, so followers see lines as they come.
func printOut(_ data: Data) {
    FileHandle.standardOutput.write(data)
}
