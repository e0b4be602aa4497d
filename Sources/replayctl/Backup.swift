import ArgumentParser
import Foundation
import ReplayClient

/// `replayctl backup PATH`: the daemon copies its SQLite file to PATH while it serves.
struct Backup: DaemonCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the daemon's database, consistently, while it keeps serving.",
        discussion: """
            The daemon writes the copy (SQLite's online backup API, beside its writer): it \
            holds every event acknowledged before the command and is a database `replayd \
            --db PATH` serves. PATH is read from this shell's folder and must not exist. \
            Prints each stream of the copy with its last sequence number. Only the daemon's \
            own user or root may take a backup; a PostgreSQL store is backed up with \
            PostgreSQL's tools.
            """)
    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @Argument(help: "Where to write the copy (a new file).", completion: .file()) var path: String
    @Flag(help: "Print the daemon's answer as JSON.") var json = false

    func run(with client: ReplayClient) async throws {
        // The daemon runs elsewhere in the file system's eyes: send it an absolute path.
        let absolute = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardized.path
        let copy = try await client.backup(to: absolute)
        if json { return printOut(try StreamTable.json(copy)) }
        let width = max(6, copy.streams.map(\.stream.count).max() ?? 0)
        var lines = "STREAM".padding(toLength: width, withPad: " ", startingAt: 0) + "  LAST\n"
        for stream in copy.streams {
            lines += stream.stream.padding(toLength: width, withPad: " ", startingAt: 0) + "  \(stream.last)\n"
        }
        printOut(Data(lines.utf8))
        printError("wrote \(copy.path): \(copy.bytes) bytes, \(copy.streams.count) streams, in \(String(format: "%.2f", copy.seconds)) s")
    }
}
