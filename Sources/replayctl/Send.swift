import ArgumentParser
import Foundation
import ReplayClient

struct Send: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish events to a stream.",
        discussion: """
            Each PAYLOAD argument is one event. With none, each line of standard input is one \
            event, sent pipelined (many in flight), so `seq 1 1000000 | replayctl send s` is fast. \
            Prints the sequence number of each acknowledged event, one per line, in order. Exits 0 \
            only when every event was acknowledged as stored.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Argument(help: "Payloads, one event each (default: lines of standard input).") var payloads: [String] = []
    @Flag(name: .shortAndLong, help: "Print nothing on success.") var quiet = false

    /// Lines per pipelined write; two writes are in flight while the next is read.
    static let chunk = 4096

    func run(with client: ReplayClient) async throws {
        var failures = 0
        var pending: PublishBatch?
        func report(_ results: [Result<UInt64, ReplayClientError>]) {
            var out = ""
            for result in results {
                switch result {
                case .success(let sequence): if !quiet { out += "\(sequence)\n" }
                case .failure(let error):
                    failures += 1
                    printError("replayctl: not stored: \(error)")
                }
            }
            if !out.isEmpty { printOut(Data(out.utf8)) }
        }
        var input = payloads.isEmpty ? nil : payloads.map { Data($0.utf8) }
        while true {
            let batch: [Data]
            if let all = input {
                batch = all
                input = []
            } else {
                batch = Self.readLines(max: Self.chunk)
            }
            if batch.isEmpty { break }
            // Written now, in order; acknowledged while the next batch is read.
            let sending = client.startPublishing(stream, contentsOf: batch)
            if let previous = pending { report(try await previous.results) }
            pending = sending
            if payloads.isEmpty == false, input?.isEmpty == true { break }
        }
        if let last = pending { report(try await last.results) }
        if failures > 0 { throw Exit.refused }
    }

    static func readLines(max: Int) -> [Data] {
        var lines: [Data] = []
        while lines.count < max, let line = readLine(strippingNewline: true) {
            lines.append(Data(line.utf8))
        }
        return lines
    }
}
