import ArgumentParser
import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol

struct Subscribe: DaemonCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print a stream's events: its retained history, then live ones.",
        discussion: """
            Prints each payload on its own line (--json: one object per line with stream, seq, \
            time and payload; a payload that is not UTF-8 comes as payload_base64 instead; \
            traceparent if the event has one, and hash, its hash-chain link, when reading one \
            stream without a group). \
            Exits 0 after --count events or when the stream completes; exits 2 with the \
            failure message on standard error when it fails. Gaps (history removed by \
            retention) are reported on standard error. Ctrl-C ends it.

            --snapshot starts with the current event of every key (each key's newest retained \
            event, published with `send --key`; an empty one deletes its key), then follows \
            the stream live, with nothing missed or repeated between the two.

            --durable NAME reads as that durable consumer of the stream: it starts after the \
            consumer's acknowledged position (from the start option on its first use), \
            acknowledges each event after printing it, and waits for those acknowledgements \
            to be stored before it exits.

            --group NAME reads as a member of that consumer group of the stream (created on \
            first use at the start option): it is handed its share of the events, each to one \
            member at a time, and acknowledges each event after printing it.

            A pattern ('orders/*', 'orders/**') reads every matching stream, those created \
            later included, each from the start option (a later one from its first event); \
            with --json each line names its stream. A stream that completes or fails is \
            reported on standard error and the others go on, until --count or Ctrl-C. A \
            pattern takes --group (the group of that name on each stream), not --durable or \
            --filter.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamOrPatternArgument
    @Option(help: "Start at this sequence number.") var from: UInt64?
    @Option(help: "Start with the last N retained events.") var last: UInt64?
    @Flag(help: "Only events published from now on.") var new = false
    @Flag(help: "First the current event of every key (each key's newest), then live.") var snapshot = false
    @Option(help: ArgumentHelp("Start at the first event stored at or after TIME (ISO-8601 UTC or Unix seconds).", valueName: "time"))
    var since: String?
    @Option(help: "Exit after this many events.") var count: Int?
    @Flag(help: "One JSON object per line.") var json = false
    @Option(help: ArgumentHelp("Read as this durable consumer, acknowledging each event printed.", valueName: "name"))
    var durable: String?
    @OptionGroup var groupArguments: GroupArguments
    @Option(
        help: ArgumentHelp(
            "A jq program each event passes through on the daemon (nothing stored; sequence numbers stay the stream's).", valueName: "program"))
    var filter: String?

    func validate() throws {
        let starts = [from != nil, last != nil, new, since != nil, snapshot].filter { $0 }.count
        guard starts <= 1 else { throw ValidationError("choose one of --from, --last, --new, --since, --snapshot") }
        if snapshot, durable != nil || groupArguments.group != nil || StreamPattern.isPattern(target.stream) {
            throw ValidationError("--snapshot reads one stream, not as a durable consumer, a group or a pattern")
        }
        if let since, Timestamp.parseLenient(since) == nil {
            throw ValidationError("--since takes an ISO-8601 UTC time (2026-11-22T03:00:00Z) or Unix seconds")
        }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if durable != nil, groupArguments.group != nil { throw ValidationError("choose --durable or --group") }
        if filter != nil, groupArguments.group != nil { throw ValidationError("--filter reads one stream, plain or durable, not a group") }
        if StreamPattern.isPattern(target.stream) {
            if durable != nil { throw ValidationError("a pattern takes no --durable: a durable consumer follows one stream") }
            if filter != nil { throw ValidationError("a pattern takes no --filter: a filter reads one stream") }
        }
    }

    var stream: String { target.stream }

    var start: StartPosition {
        if let from { return .from(from) }
        if let last { return .last(last) }
        if new { return .new }
        if snapshot { return .snapshot }
        if let since, let seconds = Timestamp.parseLenient(since) { return .since(seconds) }
        return .all
    }

    func run(with client: ReplayClient) async throws {
        let onGap: @Sendable (ClosedRange<UInt64>) -> Void = { gap in
            printError("replayctl: gap: events \(gap.lowerBound)...\(gap.upperBound) are no longer retained")
        }
        let group = groupArguments.options()
        let subscription =
            if let pattern = target.pattern {
                try await client.subscribe(
                    pattern: pattern, from: start, group: group, hashes: json,
                    onGap: { stream, gap in
                        printError("replayctl: gap: events \(gap.lowerBound)...\(gap.upperBound) of '\(stream)' are no longer retained")
                    },
                    onEnd: { stream, failure in
                        printError("replayctl: '\(stream)' " + (failure.map { "failed: \($0)" } ?? "completed"))
                    })
            } else if let group {
                try await client.subscribe(stream, from: start, group: group, hashes: json, onGap: onGap)
            } else {
                try await client.subscribe(stream, from: start, durable: durable, filter: filter, hashes: json, onGap: onGap)
            }
        var received = 0
        var acknowledging: Task<Void, any Error>?
        defer { acknowledging?.cancel() }
        var events = subscription.makeAsyncIterator()
        while let event = try await events.next() {
            printOut(json ? Self.jsonLine(event) : event.payload + Data([0x0A]))
            received += 1
            if durable != nil || group != nil {
                // In order, pipelined: each waits for the one before, none for the next event.
                // A durable consumer's ACK is cumulative; a group member's is of that event.
                acknowledging = Task { [previous = acknowledging] in
                    try await previous?.value
                    try await subscription.acknowledge(event)
                }
            }
            // Acknowledgements are awaited while the subscription is still being read: leaving
            // the loop unsubscribes, and an ACK after that has no subscription to move.
            if let count, received >= count { break }
        }
        try await acknowledging?.value
        acknowledging = nil
        withExtendedLifetime(events) {}  // the subscription lives until its ACKs are stored
    }

    static func jsonLine(_ event: ReplayEvent) -> Data {
        var object: [String: Any] = ["stream": event.stream, "seq": event.sequence, "time": event.time]
        if let key = event.key { object["key"] = key.text }
        if let trace = event.traceParent { object["traceparent"] = trace.text }
        if let hash = event.hash { object["hash"] = hash.hex }
        if let text = event.text {
            object["payload"] = text
        } else {
            object["payload_base64"] = event.payload.base64EncodedString()
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return data + Data([0x0A])
    }
}
