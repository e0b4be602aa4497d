import ArgumentParser
import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol

struct Info: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(abstract: "Show a stream's settings, retained window and state.")

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Flag(help: "Print JSON.") var json = false

    func run(with client: ReplayClient) async throws {
        let info = try await client.info(stream)
        printOut(json ? try StreamTable.json(info) : Data(StreamTable.details(info).utf8))
    }
}

struct List: DaemonCommand {
    static let configuration = CommandConfiguration(abstract: "List the streams.")

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @Flag(help: "Print JSON (full names).") var json = false
    @Flag(name: .customLong("no-trunc"), help: "Do not shorten long stream names.") var noTruncate = false
    @Flag(help: "Print only the names, one per line (shell completions use it).") var names = false

    func run(with client: ReplayClient) async throws {
        let streams = try await client.list()
        if names {
            return printOut(Data(streams.map { $0.name + "\n" }.joined().utf8))
        }
        let nameWidth = noTruncate ? Int.max : StreamTable.nameColumnWidth
        printOut(json ? try StreamTable.json(streams) : Data(StreamTable.rows(streams, nameWidth: nameWidth).utf8))
    }
}

/// Human and JSON renderings of stream descriptions.
enum StreamTable {
    static func json<T: Encodable>(_ value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(value) + Data([0x0A])
    }

    /// A compacted stream's line: how long tombstones stay, the last pass, what it removed.
    static func compaction(_ compaction: CompactionDescription) -> String {
        "keeps each key's newest, tombstones \(compaction.tombstoneRetention)s; last run \(compaction.lastRun ?? "-"), \(compaction.removed) removed"
    }

    static func details(_ info: StreamDescription) -> String {
        let state =
            switch info.terminal {
            case "completed": "completed"
            case "failed": "failed: \(info.terminalMessage ?? "")"
            default: "open"
            }
        var lines: [(String, String)] = [
            ("stream", info.name),
            ("state", state),
            ("capacity", info.capacity.map(String.init) ?? "unlimited"),
            ("max bytes", info.maxBytes.map(String.init) ?? "-"),
            ("max age", info.maxAge.map { "\($0)s" } ?? "-"),
            ("event ttl", info.eventTTL.flatMap(EventTTL.init(seconds:)).map { "\($0.text)s" } ?? "-"),
            ("events", "\(info.count) retained, seq \(info.count == 0 ? "-" : "\(info.firstSeq)...\(info.lastSeq)"), last seq \(info.lastSeq)"),
            ("bytes", "\(info.bytes)"),
            ("subscribers", "\(info.subscribers)"),
            ("keys", info.keys.map { $0 >= StreamDescription.keysCounted ? "\($0) or more" : "\($0)" } ?? "-"),
            ("compaction", info.compaction.map(Self.compaction) ?? "-"),
            ("scheduled", info.scheduled.map { count in count == 0 ? "0" : "\(count), next due \(info.nextDue ?? "-")" } ?? "-"),
            ("created", info.createdAt),
        ]
        if let source = info.source {
            let parts: [String?] = [source.state, source.pid.map { "pid \($0)" }, source.reason]
            let state = parts.compactMap { $0 }.joined(separator: ", ")
            let times = source.starts == 1 ? "time" : "times"
            lines.append(("source", source.command))
            lines.append(("connect", "\(source.connect), framing \(source.framing), restart \(source.restart)"))
            lines.append(("source state", "\(state); started \(source.starts) \(times)"))
        }
        return lines.map { $0.0.padding(toLength: 13, withPad: " ", startingAt: 0) + $0.1 }.joined(separator: "\n") + "\n"
    }

    /// The widest the STREAM column gets: one long name must not push every row off the
    /// screen (names may have 200 characters). Longer names end in "…", as `docker ps` does
    /// with IDs; `--no-trunc` and `--json` show them whole.
    static let nameColumnWidth = 40

    static func shortened(_ name: String, to width: Int) -> String {
        name.count <= width ? name : String(name.prefix(width - 1)) + "…"
    }

    static func rows(_ streams: [StreamDescription], nameWidth: Int = nameColumnWidth) -> String {
        let header = ["STREAM", "EVENTS", "LAST SEQ", "BYTES", "CAPACITY", "SUBS", "STATE"]
        let rows = streams.map { info in
            [
                shortened(info.name, to: nameWidth), "\(info.count)", "\(info.lastSeq)", "\(info.bytes)", info.capacity.map(String.init) ?? "unlimited",
                "\(info.subscribers)", info.terminal ?? "open",
            ]
        }
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { $0.element.padding(toLength: widths[$0.offset] + 2, withPad: " ", startingAt: 0) }
                .joined().trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n") + "\n"
    }
}
