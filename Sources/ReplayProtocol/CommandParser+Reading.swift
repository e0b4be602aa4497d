import ReplayModel

/// SUB and the verbs of a subscription once it runs: ACK, NACK and MORE.
extension CommandParser {
    static func subscribe(_ args: [String]) throws(ReplayError) -> Parsed {
        // A read-time filter's program is the SUB's payload, as a source's is CREATE's.
        guard let index = args.firstIndex(where: { $0.lowercased().hasPrefix("filter=") }) else {
            return .command(try subscription(args))
        }
        let size = try size(String(args[index].dropFirst(7)))
        var rest = args
        rest.remove(at: index)
        let subscription = try subscription(rest)
        switch subscription {
        case .subscribe, .subscribeDurable, .windowed, .hashed(.subscribe), .hashed(.subscribeDurable), .hashed(.windowed): break
        default: throw bad("filter= is for a SUB of one stream, plain, durable or windowed")
        }
        return .needsPayload(.filtered(subscription), size: size)
    }

    static func acknowledge(_ args: [String]) throws(ReplayError) -> Parsed {
        let usage = "usage: ACK <sid> <seq> [stream=<name>]"
        guard (2...3).contains(args.count) else { throw bad(usage) }
        let sequence = try number(args[1], "the acknowledged sequence number")
        var stream: String?
        for word in args.dropFirst(2) {
            guard word.lowercased().hasPrefix("stream=") else { throw bad(usage) }
            stream = String(word.dropFirst(7))
        }
        return .command(.ack(sid: args[0], sequence: sequence, stream: stream))
    }

    /// NACK: an event given back to its group, for now or after a delay.
    static func giveBack(_ args: [String]) throws(ReplayError) -> Parsed {
        let usage = "usage: NACK <sid> <seq> [stream=<name>] [delay=<seconds>]"
        guard (2...4).contains(args.count) else { throw bad(usage) }
        let sequence = try number(args[1], "the sequence number given back")
        var stream: String?
        var delay: Double?
        for word in args.dropFirst(2) {
            let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw bad(usage) }
            switch parts[0].lowercased() {
            case "stream": stream = parts[1]
            case "delay": delay = try seconds(parts[1], "delay", allowZero: true)
            default: throw bad(usage)
            }
        }
        return .command(.nack(sid: args[0], sequence: sequence, stream: stream, delay: delay))
    }

    static func more(_ args: [String]) throws(ReplayError) -> Parsed {
        guard args.count == 2 else { throw bad("usage: MORE <sid> <count>") }
        guard let count = Int(args[1]), (1...GroupOptions.maxWindow).contains(count) else {
            throw bad("MORE grants 1 to \(GroupOptions.maxWindow) events")
        }
        return .command(.more(sid: args[0], count: count))
    }

    static let subscribeUsage =
        "usage: SUB <stream|pattern> <sid> [all|new|from=<seq>|last=<n>|since=<time>|snapshot] [durable=<name>] [window=<n>] [filter=<bytes>]"
        + " | [group=<name> [member=<id>] [ack_wait=<seconds>] [max_deliver=<n> dead_letter=<stream>] [max_pending=<n>]] [hash=on]"

    /// SUB's words: the target, the id, a start, and either `durable=` or a group's options;
    /// `hash=on` for any of them.
    private static func subscription(_ args: [String]) throws(ReplayError) -> ClientCommand {
        guard args.count >= 2 else { throw bad(subscribeUsage) }
        var args = args
        if let index = args.firstIndex(where: { $0.lowercased() == "hash=on" }) {
            args.remove(at: index)
            return .hashed(try subscription(args))
        }
        try checkSid(args[1])
        var start: StartPosition?
        var consumer: String?
        var group: GroupOptions?
        var window: Int?
        for word in args.dropFirst(2) {
            let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
            let key = parts.count == 2 ? parts[0].lowercased() : ""
            switch key {
            case "durable":
                guard consumer == nil else { throw bad(subscribeUsage) }
                consumer = try name(parts[1], "a durable consumer's name")
            case "group":
                guard group == nil else { throw bad(subscribeUsage) }
                group = GroupOptions(group: try name(parts[1], "a group's name"))
            case "window":
                guard window == nil, let count = Int(parts[1]), (1...GroupOptions.maxWindow).contains(count) else {
                    throw bad("window= is a count of events, 1 to \(GroupOptions.maxWindow)")
                }
                window = count
            case "member", "ack_wait", "max_deliver", "dead_letter", "max_pending":
                guard group != nil else { throw bad("\(key)= goes with group=<name>, before it: \(subscribeUsage)") }
                try groupOption(key, parts[1], into: &group!)
            default:
                guard start == nil else { throw bad(subscribeUsage) }
                start = try startPosition(word)
            }
        }
        if consumer != nil, group != nil { throw bad("a SUB is durable=<name> or group=<name>, not both") }
        if start == .snapshot, consumer != nil || group != nil || StreamPattern.isPattern(args[0]) {
            throw bad("a snapshot start is for a plain SUB of one stream, not a durable consumer, a group or a pattern")
        }
        if let window {
            // A group member is bounded by max_pending already; a pattern is many streams.
            guard group == nil, !StreamPattern.isPattern(args[0]) else {
                throw bad("window= is for a SUB of one stream, plain or durable (a group member's bound is max_pending)")
            }
            let start = start ?? .all
            let subscription: ClientCommand =
                consumer.map { .subscribeDurable(stream: args[0], sid: args[1], start: start, consumer: $0) }
                ?? .subscribe(stream: args[0], sid: args[1], start: start)
            return .windowed(subscription, window: window)
        }
        if let group, group.maxDeliver != nil, group.deadLetter == nil {
            throw bad("max_deliver=\(group.maxDeliver!) needs dead_letter=<stream>: an event given up on must go somewhere")
        }
        if StreamPattern.isPattern(args[0]) {
            guard consumer == nil else { throw bad("a durable consumer follows one stream, not a pattern") }
            let pattern = try pattern(args[0])
            if let group {
                if let deadLetter = group.deadLetter, pattern.matches(deadLetter) {
                    throw bad("dead_letter=\(deadLetter) matches the pattern \(pattern): its events would come back to the group")
                }
                return .subscribePatternGroup(pattern: pattern, sid: args[1], start: start ?? .all, options: group)
            }
            return .subscribePattern(pattern: pattern, sid: args[1], start: start ?? .all)
        }
        if let group { return .subscribeGroup(stream: args[0], sid: args[1], start: start ?? .all, options: group) }
        if let consumer { return .subscribeDurable(stream: args[0], sid: args[1], start: start ?? .all, consumer: consumer) }
        return .subscribe(stream: args[0], sid: args[1], start: start ?? .all)
    }

    private static func groupOption(_ key: String, _ value: String, into options: inout GroupOptions) throws(ReplayError) {
        switch key {
        case "member": options.member = try name(value, "a member id")
        case "ack_wait": options.ackWait = try seconds(value, "ack_wait", allowZero: false)
        case "max_deliver":
            guard let count = Int(value), count >= 1 else { throw bad("max_deliver is a count of deliveries, 1 or more") }
            options.maxDeliver = count
        case "dead_letter":
            guard StreamName.isValid(value) else { throw bad("dead_letter: '\(value.prefix(64))' is not a stream name: \(StreamName.rule)") }
            options.deadLetter = value
        default:
            guard let count = Int(value), (0...GroupOptions.maxPendingLimit).contains(count) else {
                throw bad("max_pending is a count from 0 (a member that only acknowledges) to \(GroupOptions.maxPendingLimit)")
            }
            options.maxPending = count
        }
    }

    private static func pattern(_ text: String) throws(ReplayError) -> StreamPattern {
        switch StreamPattern.parse(text) {
        case .success(let pattern): return pattern
        case .failure(let error): throw bad("bad pattern '\(text.prefix(64))': \(error)")
        }
    }

    private static func checkSid(_ sid: String) throws(ReplayError) {
        guard sid.utf8.count <= 64 else { throw bad("a subscription id has at most 64 bytes") }
    }

    static func startPosition(_ word: String) throws(ReplayError) -> StartPosition {
        let lower = word.lowercased()
        if lower == "all" { return .all }
        if lower == "new" { return .new }
        if lower == "snapshot" { return .snapshot }
        let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw bad("start must be all, new, from=<seq>, last=<n>, since=<time> or snapshot") }
        switch parts[0].lowercased() {
        case "from": return .from(try number(parts[1], "from"))
        case "last": return .last(try number(parts[1], "last"))
        case "since":
            guard let time = Timestamp.parseLenient(parts[1]) else {
                throw bad("since takes an ISO-8601 UTC time (2026-11-22T03:00:00Z) or Unix seconds")
            }
            return .since(time)
        default: throw bad("start must be all, new, from=<seq>, last=<n>, since=<time> or snapshot")
        }
    }

    /// VERIFY [<stream|pattern>…] [through=<seq>]: `through` goes with one stream.
    static func verify(_ args: [String]) throws(ReplayError) -> Parsed {
        let usage = "usage: VERIFY [<stream|pattern>…] [through=<seq>] (through= with one stream)"
        var streams: [String] = []
        var through: UInt64?
        for word in args {
            if word.lowercased().hasPrefix("through=") {
                through = try number(String(word.dropFirst(8)), "the last sequence number to verify")
            } else {
                streams.append(word)
            }
        }
        if through != nil, streams.count != 1 || StreamPattern.isPattern(streams[0]) { throw bad(usage) }
        return .command(.verify(streams: streams, through: through))
    }
}
