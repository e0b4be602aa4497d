import Foundation
import NIOCore
import ReplayModel

/// Turns control lines into commands. Pure functions of the words, so they are tested
/// without any I/O.
enum CommandParser {
    /// A command whose control line announced a payload still to be read.
    enum AwaitingPayload: Equatable {
        case publish(stream: String)
        case publishChecked(stream: String, checks: AppendConditions)
        case fail(stream: String)
        case create(stream: String, options: CreateOptions)
        case derive(stream: String, options: DeriveOptions)
        case filtered(ClientCommand)

        func complete(with payload: ByteBuffer) -> ClientCommand {
            switch self {
            case .publish(let stream):
                return ClientCommand.publish(stream: stream, payload: payload)
            case .publishChecked(let stream, let checks):
                return ClientCommand.publishChecked(stream: stream, payload: payload, checks: checks)
            case .fail(let stream):
                return ClientCommand.fail(stream: stream, message: String(decoding: payload.readableBytesView, as: UTF8.self))
            case .create(let stream, var options):
                options.source = String(decoding: payload.readableBytesView, as: UTF8.self)
                return .create(stream: stream, options: options)
            case .derive(let stream, let options):
                return .derive(stream: stream, definition: String(decoding: payload.readableBytesView, as: UTF8.self), options: options)
            case .filtered(let subscription):
                return .filtered(subscription, program: String(decoding: payload.readableBytesView, as: UTF8.self))
            }
        }
    }

    enum Parsed: Equatable {
        case command(ClientCommand)
        case needsPayload(AwaitingPayload, size: Int)
        /// `ATOMIC <n>`: the next n commands are the send's PUBs.
        case beginAtomic(count: Int)
    }

    static func parse(_ words: [Substring]) throws(ReplayError) -> Parsed {
        guard let verb = words.first?.uppercased() else { throw bad("empty command") }
        let args = words.dropFirst().map(String.init)
        switch verb {
        case "PUB":
            guard args.count >= 2 else { throw bad("usage: PUB <stream> [expect=<seq>] [producer=<id> epoch=<n> pseq=<n>] <bytes>") }
            let size = try size(args[args.count - 1])
            guard args.count > 2 else { return .needsPayload(.publish(stream: args[0]), size: size) }
            return .needsPayload(.publishChecked(stream: args[0], checks: try publishChecks(args[1..<(args.count - 1)])), size: size)
        case "ATOMIC":
            try expect(args, count: 1, usage: "ATOMIC <count>, then that many PUB commands")
            guard let count = Int(args[0]), (1...ProtocolLimits.maxAtomicEvents).contains(count) else {
                throw bad("ATOMIC takes a count of 1 to \(ProtocolLimits.maxAtomicEvents) PUB commands")
            }
            return .beginAtomic(count: count)
        case "SUB":
            // A read-time filter's program is the SUB's payload, as a source's is CREATE's.
            if let index = args.firstIndex(where: { $0.lowercased().hasPrefix("filter=") }) {
                let size = try size(String(args[index].dropFirst(7)))
                var rest = args
                rest.remove(at: index)
                let subscription = try subscription(rest)
                switch subscription {
                case .subscribe, .subscribeDurable, .windowed: break
                default: throw bad("filter= is for a SUB of one stream, plain, durable or windowed")
                }
                return .needsPayload(.filtered(subscription), size: size)
            }
            return .command(try subscription(args))
        case "ACK":
            guard (2...3).contains(args.count) else { throw bad("usage: ACK <sid> <seq> [stream=<name>]") }
            let sequence = try number(args[1], "the acknowledged sequence number")
            var stream: String?
            for word in args.dropFirst(2) {
                guard word.lowercased().hasPrefix("stream=") else { throw bad("usage: ACK <sid> <seq> [stream=<name>]") }
                stream = String(word.dropFirst(7))
            }
            return .command(.ack(sid: args[0], sequence: sequence, stream: stream))
        case "NACK":
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
        case "GROUPS":
            try expect(args, count: 1, usage: "GROUPS <stream>")
            return .command(.groups(stream: args[0]))
        case "PENDING":
            try expect(args, count: 2, usage: "PENDING <stream> <group>")
            try notAPattern(args[0], "PENDING")
            return .command(.pending(stream: args[0], group: args[1]))
        case "DELGROUP":
            try expect(args, count: 2, usage: "DELGROUP <stream> <group>")
            try notAPattern(args[0], "DELGROUP")
            return .command(.deleteGroup(stream: args[0], group: args[1]))
        case "CONSUMERS":
            try expect(args, count: 1, usage: "CONSUMERS <stream>")
            return .command(.consumers(stream: args[0]))
        case "DELCONSUMER":
            try expect(args, count: 2, usage: "DELCONSUMER <stream> <name>")
            return .command(.deleteConsumer(stream: args[0], name: args[1]))
        case "MORE":
            try expect(args, count: 2, usage: "MORE <sid> <count>")
            guard let count = Int(args[1]), (1...GroupOptions.maxWindow).contains(count) else {
                throw bad("MORE grants 1 to \(GroupOptions.maxWindow) events")
            }
            return .command(.more(sid: args[0], count: count))
        case "UNSUB":
            try expect(args, count: 1, usage: "UNSUB <sid>")
            return .command(.unsubscribe(sid: args[0]))
        case "CREATE":
            guard let stream = args.first else {
                throw bad(
                    "usage: CREATE <stream> [capacity=<n>|unlimited] [max_bytes=<n>] [max_age=<seconds>] [keep_unacked=<n>]"
                        + " [connect=eager|lazy|refcount source=<bytes>]")
            }
            let (options, sourceSize) = try createOptions(args.dropFirst())
            if let sourceSize { return .needsPayload(.create(stream: stream, options: options), size: sourceSize) }
            return .command(.create(stream: stream, options: options))
        case "DERIVE":
            let usage = "usage: DERIVE <stream> [capacity=<n>|unlimited] [rebuild] <bytes>, then the definition (JSON)"
            guard args.count >= 2 else { throw bad(usage) }
            var options = DeriveOptions()
            for word in args.dropFirst().dropLast() {
                if word == "rebuild" {
                    options.rebuild = true
                } else if word.hasPrefix("capacity="), let capacity = CreateOptions.Capacity(String(word.dropFirst(9))) {
                    options.capacity = capacity
                } else {
                    throw bad(usage)
                }
            }
            return .needsPayload(.derive(stream: args[0], options: options), size: try size(args[args.count - 1]))
        case "DERIVATIONS":
            try expect(args, count: 0, usage: "DERIVATIONS")
            return .command(.derivations)
        case "DELETE":
            try expect(args, count: 1, usage: "DELETE <stream>")
            return .command(.delete(stream: args[0]))
        case "INFO":
            try expect(args, count: 1, usage: "INFO <stream>")
            return .command(.info(stream: args[0]))
        case "SUBSCRIPTIONS":
            try expect(args, count: 0, usage: "SUBSCRIPTIONS")
            return .command(.subscriptions)
        case "LIST":
            try expect(args, count: 0, usage: "LIST")
            return .command(.list)
        case "COMPLETE":
            try expect(args, count: 1, usage: "COMPLETE <stream>")
            return .command(.complete(stream: args[0]))
        case "FAIL":
            try expect(args, count: 2, usage: "FAIL <stream> <bytes>, then the message")
            return .needsPayload(.fail(stream: args[0]), size: try size(args[1]))
        case "RESET":
            guard args.count == 1 || (args.count == 2 && ["keep", "drop"].contains(args[1].lowercased())) else {
                throw bad("usage: RESET <stream> [keep|drop]")
            }
            return .command(.reset(stream: args[0], keepHistory: args.count == 1 || args[1].lowercased() == "keep"))
        case "PING":
            return .command(.ping)
        default:
            throw ReplayError(.unknownCommand, "unknown command '\(verb.prefix(32))'; see docs/PROTOCOL.md")
        }
    }

    static func bad(_ message: String) -> ReplayError {
        ReplayError(.badCommand, message)
    }

    private static func expect(_ args: [String], count: Int, usage: String) throws(ReplayError) {
        guard args.count == count else { throw bad("usage: \(usage)") }
    }

    private static func size(_ text: String) throws(ReplayError) -> Int {
        guard let size = Int(text), size >= 0 else { throw bad("'\(text.prefix(32))' is not a byte count") }
        return size
    }

    private static func number(_ text: String, _ what: String) throws(ReplayError) -> UInt64 {
        guard let value = UInt64(text) else { throw bad("\(what) must be a whole number, got '\(text.prefix(32))'") }
        return value
    }

    /// `expect=<seq>` and `producer=<id> epoch=<n> pseq=<n>` (the three together), any order.
    private static func publishChecks(_ words: ArraySlice<String>) throws(ReplayError) -> AppendConditions {
        var checks = AppendConditions()
        var producer: String?
        var epoch: UInt64?
        var pseq: UInt64?
        for word in words {
            let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw bad("PUB options are key=value, got '\(word.prefix(32))'") }
            switch parts[0].lowercased() {
            case "expect": checks.expectedLastSequence = try number(parts[1], "expect")
            case "producer": producer = try name(parts[1], "a producer id")
            case "epoch": epoch = try number(parts[1], "epoch")
            case "pseq": pseq = try number(parts[1], "pseq")
            default: throw bad("unknown PUB option '\(parts[0].prefix(32))'; PUB takes expect=, producer=, epoch= and pseq=")
            }
        }
        switch (producer, epoch, pseq) {
        case (nil, nil, nil): break
        case (let id?, let epoch?, let pseq?): checks.producer = ProducerStamp(id: id, epoch: epoch, sequence: pseq)
        default: throw bad("producer=, epoch= and pseq= go together")
        }
        return checks
    }

    /// A producer id or a consumer name: 1 to 200 bytes of one word.
    private static func name(_ text: String, _ what: String) throws(ReplayError) -> String {
        guard !text.isEmpty, text.utf8.count <= ProtocolLimits.maxNameLength else {
            throw bad("\(what) has 1 to \(ProtocolLimits.maxNameLength) bytes")
        }
        return text
    }

    static let subscribeUsage =
        "usage: SUB <stream|pattern> <sid> [all|new|from=<seq>|last=<n>|since=<time>] [durable=<name>] [window=<n>] [filter=<bytes>]"
        + " | [group=<name> [member=<id>] [ack_wait=<seconds>] [max_deliver=<n> dead_letter=<stream>] [max_pending=<n>]]"

    /// SUB's words: the target, the id, a start, and either `durable=` or a group's options.
    private static func subscription(_ args: [String]) throws(ReplayError) -> ClientCommand {
        guard args.count >= 2 else { throw bad(subscribeUsage) }
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

    /// A number of seconds: up to a day, with a fraction.
    private static func seconds(_ text: String, _ what: String, allowZero: Bool) throws(ReplayError) -> Double {
        guard let value = Double(text), value.isFinite, allowZero ? value >= 0 : value > 0, value <= 86_400 else {
            throw bad("\(what) is a number of seconds, \(allowZero ? "0" : "more than 0") to 86400")
        }
        return value
    }

    /// A verb that names one stream, given a pattern: said as such, not as a bad name.
    private static func notAPattern(_ target: String, _ verb: String) throws(ReplayError) {
        if StreamPattern.isPattern(target) {
            throw bad("\(verb) takes one stream's name, not a pattern ('\(target.prefix(64))'): a group is kept per stream")
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
        let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { throw bad("start must be all, new, from=<seq>, last=<n> or since=<time>") }
        switch parts[0].lowercased() {
        case "from": return .from(try number(parts[1], "from"))
        case "last": return .last(try number(parts[1], "last"))
        case "since":
            guard let time = Timestamp.parseLenient(parts[1]) else {
                throw bad("since takes an ISO-8601 UTC time (2026-11-22T03:00:00Z) or Unix seconds")
            }
            return .since(time)
        default: throw bad("start must be all, new, from=<seq>, last=<n> or since=<time>")
        }
    }

    private static func createOptions(_ words: ArraySlice<String>) throws(ReplayError) -> (CreateOptions, Int?) {
        var options = CreateOptions()
        var sourceSize: Int?
        for word in words {
            let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw bad("CREATE options are key=value, got '\(word.prefix(32))'") }
            let (key, value) = (parts[0].lowercased(), parts[1])
            switch key {
            case "capacity":
                guard let capacity = CreateOptions.Capacity(value) else { throw bad("capacity is a count (0 or more) or unlimited") }
                options.capacity = capacity
            case "max_bytes":
                guard let bytes = Int(value), bytes >= 0 else { throw bad("max_bytes is a byte count") }
                options.maxBytes = bytes
            case "max_age":
                guard let seconds = Double(value), seconds > 0 else { throw bad("max_age is a number of seconds, more than 0") }
                options.maxAge = seconds
            case "keep_unacked":
                guard let count = Int(value), count >= 0 else { throw bad("keep_unacked is a count of events, 0 or more") }
                options.keepUnacked = count
            case "connect":
                options.connect = value.lowercased()
            case "source":
                sourceSize = try size(value)
            default:
                // The source's options are checked where they take effect (the daemon's
                // `SourceOptions`); here only their names.
                guard SourceOptions.Key(rawValue: key) != nil else { throw bad("unknown CREATE option '\(key.prefix(32))'") }
                options.sourceOptions[key] = value
            }
        }
        if (options.connect != nil) != (sourceSize != nil) {
            throw bad("connect=<mode> and source=<bytes> go together")
        }
        return (options, sourceSize)
    }
}
