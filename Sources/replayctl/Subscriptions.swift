import ArgumentParser
import Foundation
import ReplayClient
import ReplayProtocol

struct Subscriptions: DaemonCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the Durable Streams subscriptions made over HTTP.",
        discussion: """
            Lists each subscription with its type, its wake's generation, the worker holding \
            it (pull-wake) and until when, its failed webhook deliveries, and its lag summed \
            over its linked streams; --streams adds a line per linked stream with its \
            acknowledged position and lag. (docs/HTTP.md, "Subscriptions")
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @Flag(help: "A line per linked stream too.") var streams = false
    @Flag(help: "One JSON array.") var json = false

    func run(with client: ReplayClient) async throws {
        let subscriptions = try await client.subscriptions()
        if json { return printOut(try jsonLine(subscriptions)) }
        var out = Table(["SUBSCRIPTION", "TYPE", "FOLLOWS", "GENERATION", "HOLDER", "LEASE UNTIL", "FAILURES", "LAG"])
        for subscription in subscriptions {
            let follows = ([subscription.pattern].compactMap { $0 } + subscription.streams.filter { $0.link == "explicit" }.map(\.stream))
            out.add([
                subscription.id, subscription.type, follows.joined(separator: ","), "\(subscription.generation)", subscription.holder ?? "-",
                subscription.leaseUntil ?? "-", "\(subscription.failures)", "\(subscription.streams.reduce(0) { $0 + $1.lag })",
            ])
            if streams {
                for link in subscription.streams {
                    out.add(["  " + link.stream, link.link, "", "", "", "acked \(link.ackedSeq)", "", "\(link.lag)"])
                }
            }
        }
        printOut(Data(out.text.utf8))
    }
}
