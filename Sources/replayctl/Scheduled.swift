import ArgumentParser
import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol

struct Scheduled: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a stream's pending scheduled events.",
        discussion: """
            The events scheduled with `send --delay` or `--at` (PUB delay= or at=, the HTTP \
            Replay-Delay and Replay-At headers) that have not fallen due yet, earliest first: \
            id, due time, key and payload. `replayctl info` counts them and names the next due.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Option(help: "List at most this many (1 to \(ProtocolLimits.maxScheduledListed)).") var limit = 100
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        guard (1...ProtocolLimits.maxScheduledListed).contains(limit) else {
            throw ValidationError("--limit takes 1 to \(ProtocolLimits.maxScheduledListed)")
        }
    }

    func run(with client: ReplayClient) async throws {
        let events = try await client.scheduled(stream, limit: limit)
        if json { return printOut(try StreamTable.json(events)) }
        var out = "ID".padding(toLength: 10, withPad: " ", startingAt: 0) + "DUE                       KEY         PAYLOAD\n"
        for event in events {
            let payload = event.text.map { String($0.prefix(60)) } ?? "(\(event.size ?? 0) bytes, not UTF-8)"
            out += String(event.id).padding(toLength: 10, withPad: " ", startingAt: 0) + event.due + "  "
            out += (event.key ?? "-").padding(toLength: 12, withPad: " ", startingAt: 0) + payload + "\n"
        }
        printOut(Data(out.utf8))
    }
}

struct Unschedule: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cancel a pending scheduled event.",
        discussion: """
            ID is the event's id, as `send --delay` and `replayctl scheduled` print it. Exits 1 \
            when the stream has no pending event of that id (it was appended or cancelled).
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Argument(help: "The scheduled event's id.") var id: Int64

    func run(with client: ReplayClient) async throws {
        do {
            try await client.unschedule(stream, id: id)
        } catch ReplayClientError.server(let error) where error.code == .unknownScheduled {
            printError("replayctl: \(error.message)")
            throw Exit.refused
        }
    }
}
