import ArgumentParser
import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol

struct Get: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the current value of a key: its newest event's payload.",
        discussion: """
            The log read as a key-value store: the payload of the newest retained event of \
            STREAM whose key is KEY (published with `send --key`, PUB key=, or the HTTP \
            Replay-Key header). Exits 1, printing nothing, when no retained event has the key \
            or its newest is a tombstone (an event with the key and an empty payload). --json \
            prints the event as one object: stream, key, seq, time and payload (or \
            payload_base64 when it is not UTF-8).
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Argument(help: "The key.") var key: String
    @Flag(help: "Print the event as JSON.") var json = false

    func validate() throws {
        if EventKey(key) == nil { throw ValidationError("a key is \(EventKey.format)") }
    }

    func run(with client: ReplayClient) async throws {
        guard let value = try await client.latest(stream, key: EventKey(key)!) else {
            printError("replayctl: stream '\(stream)' has no current value for key '\(key)'")
            throw Exit.refused
        }
        printOut(json ? try StreamTable.json(value) : value.payload + Data([0x0A]))
    }
}
