import ArgumentParser
import Foundation
import ReplayClient
import ReplayProtocol

struct Consumers: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a stream's durable consumers, or delete one.",
        discussion: """
            Lists each consumer with its acknowledged position (ACKED) and the events committed \\
            after it (LAG). --delete NAME forgets that consumer: its next subscriber starts anew.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Option(help: ArgumentHelp("Delete this consumer.", valueName: "name")) var delete: String?
    @Flag(help: "One JSON array.") var json = false

    func run(with client: ReplayClient) async throws {
        if let delete { return try await client.deleteConsumer(delete, of: stream) }
        let consumers = try await client.consumers(stream)
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return printOut(try encoder.encode(consumers) + Data([0x0A]))
        }
        var out = "NAME".padding(toLength: 24, withPad: " ", startingAt: 0) + "ACKED      LAG\n"
        for consumer in consumers {
            out +=
                consumer.name.padding(toLength: 24, withPad: " ", startingAt: 0)
                + "\(consumer.ackedSeq)".padding(toLength: 11, withPad: " ", startingAt: 0) + "\(consumer.lag)\n"
        }
        printOut(Data(out.utf8))
    }
}
