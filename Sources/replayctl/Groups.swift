import ArgumentParser
import Foundation
import ReplayClient
import ReplayProtocol

struct Groups: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a stream's consumer groups, or delete one.",
        discussion: """
            Lists each group with its members, its events pending (handed out and not \
            acknowledged), redelivered and dead-lettered, the age of its oldest pending event, \
            and its lag (events not handed out yet). --delete NAME deletes that group and its \
            pending events.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Option(help: ArgumentHelp("Delete this group.", valueName: "name")) var delete: String?
    @Flag(help: "One JSON array.") var json = false

    func run(with client: ReplayClient) async throws {
        if let delete { return try await client.deleteGroup(delete, of: stream) }
        let groups = try await client.groups(stream)
        if json { return printOut(try jsonLine(groups)) }
        var out = Table(["GROUP", "MEMBERS", "PENDING", "REDELIVERED", "DEAD", "OLDEST", "LAG"])
        for group in groups {
            out.add([
                group.name, "\(group.members.count)", "\(group.pending)", "\(group.redelivered)", "\(group.deadLettered)",
                group.oldestPendingMs.map { "\(Double($0) / 1000)s" } ?? "-", "\(group.lag)",
            ])
        }
        printOut(Data(out.text.utf8))
    }
}

struct Pending: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a consumer group's pending events.",
        discussion: """
            One line per event handed out and not acknowledged: its sequence number, the member \
            holding it (- while it waits to be handed out again), how many times it was handed \
            out, and how long since the last time.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Argument(help: "The group.") var group: String
    @Flag(help: "One JSON array.") var json = false

    func run(with client: ReplayClient) async throws {
        let pending = try await client.pending(stream, group: group)
        if json { return printOut(try jsonLine(pending)) }
        var out = Table(["SEQ", "MEMBER", "DELIVERIES", "IDLE"])
        for event in pending {
            out.add(["\(event.seq)", event.member ?? "-", "\(event.deliveries)", "\(Double(event.idleMs) / 1000)s"])
        }
        printOut(Data(out.text.utf8))
    }
}

/// Columns padded to their widest cell.
struct Table {
    private var rows: [[String]]

    init(_ header: [String]) {
        rows = [header]
    }

    mutating func add(_ row: [String]) {
        rows.append(row)
    }

    var text: String {
        let widths = rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0)
            }.joined()
        }.joined(separator: "\n") + "\n"
    }
}

/// `value` as one line of sorted-key JSON.
func jsonLine<T: Encodable>(_ value: T) throws -> Data {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    return try encoder.encode(value) + Data([0x0A])
}
