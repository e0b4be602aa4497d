import ArgumentParser
import ReplayClient
import ReplayModel
import ReplayProtocol

struct Create: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a stream, optionally fed by a source command.",
        discussion: """
            Creating a stream that exists with the same settings succeeds and changes nothing.

            With --source, replayd runs the command (/bin/sh -c) and each line of its output \
            becomes an event. --connect eager runs it now and at every daemon start; lazy runs \
            it for the first subscriber, once; refcount runs it while anyone subscribes. Exit \
            status 0 completes the stream, anything else fails it (with the stderr tail). A \
            terminal stream does not run its source again until `replayctl reset`.

            --schedule '*/5 * * * *' runs the command at each tick of a cron schedule instead \
            (five fields, names, steps, @hourly…; UTC unless it starts with CRON_TZ=Zone/Name): \
            each run's lines are appended, its end does not end the stream, and a tick missed \
            while the daemon was down runs once at start, not once per missed tick. A scheduled \
            source is eager.

            --compact keeps each key's newest event: compaction removes the events a newer \
            one of their key superseded, once every durable consumer and consumer group of the \
            stream has passed them. A keyed event with an empty payload deletes its key, and \
            goes itself after --tombstone-retention (default 1d).
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @Option(help: ArgumentHelp("Events kept: a count, or 'unlimited' (default: the daemon's default).", valueName: "n|unlimited"))
    var capacity: CreateOptions.Capacity?
    @Option(name: .customLong("max-bytes"), help: "Payload bytes kept; the oldest go first.") var maxBytes: Int?
    @Option(name: .customLong("max-age"), help: ArgumentHelp("Events older than this are removed: 90s, 15m, 12h, 7d.", valueName: "duration"))
    var maxAge: String?
    @Option(
        name: .customLong("keep-unacked"),
        help: ArgumentHelp("Keep up to N events beyond the limits while a consumer group has not acknowledged them.", valueName: "n"))
    var keepUnacked: Int?
    @Option(
        name: .customLong("event-ttl"),
        help: ArgumentHelp("How long an event lives when its publish does not say: 30s, 15m, 1d.", valueName: "duration"))
    var eventTTL: String?
    @Flag(help: "Keep each key's newest event (key compaction).") var compact = false
    @Option(
        name: .customLong("tombstone-retention"),
        help: ArgumentHelp("With --compact, how long a key's tombstone stays: 0, 30m, 1d (default 1d).", valueName: "duration"))
    var tombstoneRetention: String?

    @Option(help: ArgumentHelp("A shell command whose output becomes the stream's events.", valueName: "command"))
    var source: String?
    @Option(help: ArgumentHelp("When the source runs: eager, lazy or refcount.", valueName: "mode"))
    var connect: String?
    @Option(help: ArgumentHelp("How output becomes events: lines, nul or whole.", valueName: "framing"))
    var framing: String?
    @Option(help: ArgumentHelp("never, or on-failure to restart a failed source with backoff.", valueName: "policy"))
    var restart: String?
    @Option(name: .customLong("max-restarts"), help: "Restarts before a failure is final (with --restart on-failure).")
    var maxRestarts: Int?
    @Option(name: .customLong("restart-delay"), help: ArgumentHelp("First restart delay, doubled each time: 1s, 500ms…", valueName: "duration"))
    var restartDelay: String?
    @Option(help: ArgumentHelp("Time between SIGTERM and SIGKILL when a source is stopped.", valueName: "duration"))
    var grace: String?
    @Option(help: ArgumentHelp("Run the source at each tick of this cron schedule: '*/5 * * * *'.", valueName: "cron"))
    var schedule: String?

    /// The source options given, as CREATE's words under their one spelling (`SourceOptions.Key`).
    var sourceOptions: [String: String] {
        let given: [(SourceOptions.Key, String?)] = [
            (.framing, framing), (.restart, restart), (.maxRestarts, maxRestarts.map { "\($0)" }),
            (.restartDelay, restartDelay.flatMap(Duration.seconds).map { "\($0)" }), (.grace, grace.flatMap(Duration.seconds).map { "\($0)" }),
            (.schedule, schedule),
        ]
        var words: [String: String] = [:]
        for case let (key, value?) in given { words[key.rawValue] = value }
        return words
    }

    func validate() throws {
        if let connect, !["eager", "lazy", "refcount"].contains(connect) { throw ValidationError("--connect is eager, lazy or refcount") }
        if source == nil, framing != nil || restart != nil || maxRestarts != nil || restartDelay != nil || grace != nil || schedule != nil {
            throw ValidationError("--framing, --restart, --max-restarts, --restart-delay, --grace and --schedule need --source")
        }
        if schedule != nil, let connect, connect != "eager" { throw ValidationError("a scheduled source is eager, not \(connect)") }
        for (name, value) in [("--restart-delay", restartDelay), ("--grace", grace)] {
            if let value, Duration.seconds(value) == nil { throw ValidationError("\(name) takes a duration such as 500ms, 2s or 1m") }
        }
        do { _ = try SourceOptions(words: sourceOptions) } catch { throw ValidationError(error.message) }
        if let maxAge, Duration.seconds(maxAge) == nil {
            throw ValidationError("--max-age takes a duration such as 90s, 15m, 12h or 7d")
        }
        if let maxBytes, maxBytes < 0 { throw ValidationError("--max-bytes must be 0 or more") }
        if let keepUnacked, keepUnacked < 0 { throw ValidationError("--keep-unacked must be 0 or more") }
        if tombstoneRetention != nil, !compact { throw ValidationError("--tombstone-retention needs --compact") }
        if tombstoneRetention != nil, tombstoneSeconds == nil {
            throw ValidationError("--tombstone-retention takes 0 or a duration such as 30m or 1d")
        }
        if let eventTTL, Duration.seconds(eventTTL).flatMap(EventTTL.init(seconds:)) == nil {
            throw ValidationError("--event-ttl takes a duration such as 30s, 15m or 1d (\(EventTTL.rangeMessage))")
        }
    }

    func run(with client: ReplayClient) async throws {
        try await client.create(
            stream, capacity: capacity?.limit, unlimited: capacity == .unlimited,
            maxBytes: maxBytes, maxAge: maxAge.flatMap(Duration.seconds),
            source: source, connect: connect, sourceOptions: sourceOptions, keepUnacked: keepUnacked,
            eventTTL: eventTTL.flatMap(Duration.seconds).flatMap(EventTTL.init(seconds:)), compact: compact,
            tombstoneRetention: tombstoneSeconds)
    }

    /// `--tombstone-retention` in seconds: 0 (tombstones go at the next pass) or a duration.
    private var tombstoneSeconds: Double? {
        tombstoneRetention.flatMap { $0 == "0" ? 0 : Duration.seconds($0) }
    }
}

extension Duration {
    /// Parses `90`, `90s`, `500ms`, `15m`, `12h`, `7d` into seconds.
    static func seconds(_ text: String) -> Double? {
        if text.hasSuffix("ms"), let value = Double(text.dropLast(2)), value > 0 { return value / 1000 }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let unit = text.last, let scale = units[unit], let value = Double(text.dropLast()), value > 0 {
            return value * scale
        }
        if let value = Double(text), value > 0 { return value }
        return nil
    }
}

extension CreateOptions.Capacity: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
