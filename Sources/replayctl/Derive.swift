import ArgumentParser
import Foundation
import ReplayClient
import ReplayModel
import ReplayProtocol

struct Derive: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Define a derived stream: a jq program over other streams, computed once by the daemon.",
        discussion: """
            The daemon reads the inputs (--from, a name or a pattern such as 'orders/*'; repeat for \
            merge), runs the program on each event, and keeps its outputs as the stream's events, \
            exactly once: the outputs, the state and the input positions commit together.

              replayctl derive big-orders --from orders --jq 'select(.amount > 100)'
              replayctl derive totals --from orders --scan '{}' \\
                --jq '.state[.event.customer] += .event.amount | .state'

            With --scan INIT the program sees {state, event, stream, seq} and returns the new state \
            (emitted), or {state, emit: [...]}. --window 1m folds each minute of commit time and \
            emits {start, end, events, state} when the next begins. --scan-key KEY folds each key \
            apart: the program sees {state, key, event, stream, seq}, {key, state} is emitted. \
            --combine-latest: the program \
            sees {latest: {input: event}, stream, seq} once every input has an event.

            --connect eager computes now and after every restart; lazy from the first subscriber \
            on; refcount while anyone subscribes. --on-error skip|stop|dead-letter=STREAM decides \
            what a failing event does. Builtins that read anything but the input (now, env, input, \
            debug…) are refused. The same definition again changes nothing; another is refused \
            unless --rebuild, which deletes the old outputs and recomputes from the retained inputs.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Option(name: .customLong("from"), help: ArgumentHelp("An input stream or pattern; repeat to merge several.", valueName: "stream"))
    var inputs: [String] = []
    @Option(help: ArgumentHelp("The jq program run on each event.", valueName: "program")) var jq: String
    @Option(help: ArgumentHelp("Fold: the initial state, as JSON.", valueName: "init")) var scan: String?
    @Option(name: .customLong("scan-key"), help: ArgumentHelp("Fold per key: a jq program giving each event's key.", valueName: "program"))
    var scanKey: String?
    @Flag(name: .customLong("combine-latest"), help: "Emit the latest event of every input, once each has one.") var combineLatest = false
    @Option(help: ArgumentHelp("Tumbling windows of commit time (with --scan): 10s, 1m, 1h.", valueName: "duration")) var window: String?
    @Option(help: ArgumentHelp("Complete the derived stream after N outputs.", valueName: "n")) var take: UInt64?
    @Option(help: ArgumentHelp("Drop the first N outputs.", valueName: "n")) var skip: UInt64?
    @Option(name: .customLong("take-until"), help: ArgumentHelp("Complete when this stream gets an event.", valueName: "stream"))
    var takeUntil: String?
    @Flag(help: "Drop an output equal to the one before it (distinctUntilChanged).") var distinct = false
    @Option(help: ArgumentHelp("When it computes: eager, lazy or refcount.", valueName: "mode")) var connect: String = "eager"
    @Option(help: ArgumentHelp("Where it starts: beginning (the inputs' retained history) or now.", valueName: "start")) var start: String = "beginning"
    @Option(name: .customLong("on-error"), help: ArgumentHelp("skip, stop, or dead-letter=STREAM.", valueName: "policy"))
    var onError: String = "stop"
    @Option(help: ArgumentHelp("Events kept: a count, or 'unlimited' (default: the daemon's default).", valueName: "n|unlimited"))
    var capacity: CreateOptions.Capacity?
    @Flag(help: "Replace a different definition: delete the old outputs and recompute.") var rebuild = false

    var spec: DerivationSpec {
        get throws {
            guard let connect = DerivationSpec.Connect(rawValue: connect) else { throw ValidationError("--connect is eager, lazy or refcount") }
            guard let start = DerivationSpec.Start(rawValue: start) else { throw ValidationError("--start is beginning or now") }
            guard let onError = DerivationSpec.OnError(onError) else { throw ValidationError("--on-error is skip, stop or dead-letter=STREAM") }
            var windowSeconds: Double?
            if let window {
                guard let seconds = Duration.seconds(window) else { throw ValidationError("--window takes a duration such as 10s, 1m or 1h") }
                windowSeconds = seconds
            }
            return DerivationSpec(
                inputs: inputs, program: jq, scan: scan, scanKey: scanKey, combineLatest: combineLatest, window: windowSeconds, take: take, skip: skip,
                takeUntil: takeUntil, distinct: distinct, connect: connect, start: start, onError: onError)
        }
    }

    func validate() throws {
        do {
            try spec.validate(output: stream)
        } catch let invalid as DerivationSpec.Invalid {
            throw ValidationError(invalid.message)
        }
    }

    func run(with client: ReplayClient) async throws {
        try await client.derive(stream, try spec, capacity: capacity, rebuild: rebuild)
    }
}

struct Derivations: DaemonCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the derived streams: inputs, lag, rate, errors and status.",
        discussion: """
            STATUS is running, waiting (lazy or refcount, for a subscriber), stopped (an error \
            under --on-error stop: ERROR says which) or completed. LAG counts the input events \
            committed and not yet computed.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @Flag(help: "One JSON array.") var json = false

    func run(with client: ReplayClient) async throws {
        let derivations = try await client.derivations()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return printOut(try encoder.encode(derivations) + Data([0x0A]))
        }
        func column(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count + 1), withPad: " ", startingAt: 0) }
        var out =
            column("STREAM", 20) + column("INPUTS", 20) + column("STATUS", 11) + column("LAG", 9) + column("RATE/S", 9)
            + column("PROCESSED", 11) + column("ERRORS", 8) + "ERROR\n"
        for d in derivations {
            out +=
                column(d.stream, 20) + column(d.inputs.joined(separator: ","), 20) + column(d.status.rawValue, 11) + column("\(d.lag)", 9)
                + column(String(format: "%.0f", d.rate), 9) + column("\(d.processed)", 11) + column("\(d.errors)", 8) + (d.error ?? "") + "\n"
        }
        printOut(Data(out.utf8))
    }
}
