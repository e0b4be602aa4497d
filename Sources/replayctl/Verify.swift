import ArgumentParser
import Foundation
import ReplayClient
import ReplayModel

/// `replayctl verify [STREAM…]`: the daemon recomputes hash chains while it serves.
struct Verify: DaemonCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that every stored event is what was written (hash chains).",
        discussion: """
            The daemon recomputes each stream's hash chain from its stored events, page by \
            page beside its writer, which it never holds. A stream may be a pattern \
            (orders/*); none checks every stream. Prints each stream with the events checked; \
            for a broken chain, the first event that does not match, with the hash the chain \
            expects and the one stored, and exits 4.
            """)
    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @Argument(help: "Streams or patterns to check (default: every stream).") var streams: [String] = []
    @Flag(help: "Print the daemon's reports as JSON.") var json = false

    func run(with client: ReplayClient) async throws {
        let reports = try await client.verify(streams)
        if json {
            printOut(try StreamTable.json(reports))
        } else {
            printOut(Data(Self.table(reports).utf8))
        }
        let broken = reports.filter { !$0.isIntact }
        for report in broken {
            guard let at = report.broken else { continue }
            printError("replayctl: stream '\(report.stream)' is broken at seq \(at.sequence): expected \(at.expected), found \(at.found)")
        }
        if !broken.isEmpty { throw Exit.brokenChain }
    }

    static func table(_ reports: [ChainReport]) -> String {
        let width = max(6, reports.map(\.stream.count).max() ?? 0)
        var lines = "STREAM".padding(toLength: width, withPad: " ", startingAt: 0) + "  EVENTS  SEQ       RESULT\n"
        for report in reports {
            let range = report.events == 0 ? "-" : "\(report.first)-\(report.last)"
            let result = report.broken.map { "BROKEN at seq \($0.sequence)" } ?? "ok"
            lines += report.stream.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                + String(report.events).padding(toLength: 6, withPad: " ", startingAt: 0) + "  "
                + range.padding(toLength: 8, withPad: " ", startingAt: 0) + "  " + result + "\n"
        }
        return lines
    }
}
