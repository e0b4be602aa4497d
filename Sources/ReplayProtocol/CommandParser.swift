import Foundation
import NIOCore
import ReplayModel

/// Turns control lines into commands. Pure functions of the words, so they are tested
/// without any I/O.
enum CommandParser {
    /// A command whose control line announced a payload still to be read.
    ///
    /// Every PUB's line is parsed into one and then copied out of `Parsed`, so the enum's
    /// size is paid per event: the rarer cases larger than a checked PUB are boxed
    /// (`indirect`). With `create`'s options inline it was 152 bytes, copied by `memcpy`.
    enum AwaitingPayload: Equatable {
        case publish(stream: String)
        case publishChecked(stream: String, checks: AppendConditions)
        indirect case schedule(stream: String, due: DueTime, annotations: AppendConditions)
        case fail(stream: String)
        indirect case create(stream: String, options: CreateOptions)
        indirect case derive(stream: String, options: DeriveOptions)
        indirect case filtered(ClientCommand)

        func complete(with payload: ByteBuffer) -> ClientCommand {
            switch self {
            case .publish(let stream):
                return ClientCommand.publish(stream: stream, payload: payload)
            case .publishChecked(let stream, let checks):
                return ClientCommand.publishChecked(stream: stream, payload: payload, checks: checks)
            case .schedule(let stream, let due, let annotations):
                return ClientCommand.schedule(stream: stream, payload: payload, due: due, annotations: annotations)
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
        /// A command refused whose payload (`size` bytes) follows all the same: it is
        /// skipped, never read as commands.
        case refusedPayload(ReplayError, size: Int)
        /// `ATOMIC <n>`: the next n commands are the send's PUBs.
        case beginAtomic(count: Int)
    }

    static func parse(_ words: [Substring]) throws(ReplayError) -> Parsed {
        guard let verb = words.first?.uppercased() else { throw bad("empty command") }
        guard let parser = verbs[verb] else {
            throw ReplayError(.unknownCommand, "unknown command '\(verb.prefix(32))'; see docs/PROTOCOL.md")
        }
        return try parser(words.dropFirst().map(String.init))
    }

    typealias VerbParser = @Sendable (_ args: [String]) throws(ReplayError) -> Parsed

    /// Each verb's parser, by the verb in capitals. A table rather than one switch: a verb
    /// is one entry to find, and `parse` stays one screen as verbs are added. (A plain
    /// PUB never gets here: `CommandDecoder` reads its line in place.)
    private static let verbs: [String: VerbParser] = [
        "PUB": publish, "ATOMIC": atomic, "FAIL": fail, "RESET": reset,
        "COMPLETE": fixed("COMPLETE <stream>") { .complete(stream: $0[0]) },
        "SUB": subscribe, "ACK": acknowledge, "NACK": giveBack, "MORE": more,
        "UNSUB": fixed("UNSUB <sid>") { .unsubscribe(sid: $0[0]) },
        "SUBSCRIPTIONS": fixed("SUBSCRIPTIONS") { _ in .subscriptions },
        "GROUPS": fixed("GROUPS <stream>") { .groups(stream: $0[0]) },
        "PENDING": fixed("PENDING <stream> <group>") { args throws(ReplayError) in
            try notAPattern(args[0], "PENDING")
            return .pending(stream: args[0], group: args[1])
        },
        "DELGROUP": fixed("DELGROUP <stream> <group>") { args throws(ReplayError) in
            try notAPattern(args[0], "DELGROUP")
            return .deleteGroup(stream: args[0], group: args[1])
        },
        "CONSUMERS": fixed("CONSUMERS <stream>") { .consumers(stream: $0[0]) },
        "DELCONSUMER": fixed("DELCONSUMER <stream> <name>") { .deleteConsumer(stream: $0[0], name: $0[1]) },
        "CREATE": create, "DERIVE": derive,
        "DERIVATIONS": fixed("DERIVATIONS") { _ in .derivations },
        "DELETE": fixed("DELETE <stream>") { .delete(stream: $0[0]) },
        "INFO": fixed("INFO <stream>") { .info(stream: $0[0]) },
        "GET": fixed("GET <stream> <key>") { args throws(ReplayError) in
            if StreamPattern.isPattern(args[0]) { throw bad("GET takes one stream's name, not a pattern ('\(args[0].prefix(64))')") }
            guard let key = EventKey(args[1]) else { throw bad("a key is \(EventKey.format), got '\(args[1].prefix(64))'") }
            return .latest(stream: args[0], key: key)
        },
        "LIST": fixed("LIST") { _ in .list },
        "SCHEDULED": scheduled,
        "UNSCHEDULE": fixed("UNSCHEDULE <stream> <id>") { args throws(ReplayError) in
            guard let id = Int64(args[1]), id > 0 else { throw bad("UNSCHEDULE takes the event's id, a positive integer") }
            return .unschedule(stream: args[0], id: id)
        },
        "BACKUP": fixed("BACKUP <path>") { .backup(path: $0[0]) },
        "VERIFY": verify,
        "PING": { _ in .command(.ping) },
    ]

    /// A verb of fixed arity with no payload: as many words as `usage` names after the verb.
    private static func fixed(
        _ usage: String, _ make: @escaping @Sendable ([String]) throws(ReplayError) -> ClientCommand
    ) -> VerbParser {
        let count = usage.split(separator: " ").count - 1
        return { args throws(ReplayError) in
            guard args.count == count else { throw bad("usage: \(usage)") }
            return .command(try make(args))
        }
    }

    private static func publish(_ args: [String]) throws(ReplayError) -> Parsed {
        guard args.count >= 2 else {
            throw bad(
                "usage: PUB <stream> [expect=<seq>] [producer=<id> epoch=<n> pseq=<n>] [key=<key>] [trace=<traceparent>] [ttl=<s>] [delay=<s>|at=<time>] <bytes>"
            )
        }
        let size = try size(args[args.count - 1])
        guard args.count > 2 else { return .needsPayload(.publish(stream: args[0]), size: size) }
        do throws(ReplayError) {
            let (checks, due) = try publishChecks(args[1..<(args.count - 1)])
            guard let due else { return .needsPayload(.publishChecked(stream: args[0], checks: checks), size: size) }
            // The checks hold when the event is appended, which is later: they would judge
            // a stream the publisher has not seen.
            if checks.expectedLastSequence != nil || checks.producer != nil {
                throw bad("a scheduled PUB (delay=, at=) takes key=, trace= and ttl=, not expect= or producer fields")
            }
            return .needsPayload(.schedule(stream: args[0], due: due, annotations: checks), size: size)
        } catch {
            // The byte count was readable: the payload comes, and must not be taken for
            // commands (a payload may well read as one).
            return .refusedPayload(error, size: size)
        }
    }

    /// `SCHEDULED <stream> [<limit>]`: the first `limit` (100 unless given, at most
    /// `ProtocolLimits.maxScheduledListed`) pending events.
    private static func scheduled(_ args: [String]) throws(ReplayError) -> Parsed {
        guard (1...2).contains(args.count) else { throw bad("usage: SCHEDULED <stream> [<limit>]") }
        if StreamPattern.isPattern(args[0]) { throw bad("SCHEDULED takes one stream's name, not a pattern ('\(args[0].prefix(64))')") }
        var limit = 100
        if args.count == 2 {
            guard let given = Int(args[1]), (1...ProtocolLimits.maxScheduledListed).contains(given) else {
                throw bad("SCHEDULED lists 1 to \(ProtocolLimits.maxScheduledListed) events")
            }
            limit = given
        }
        return .command(.scheduled(stream: args[0], limit: limit))
    }

    private static func atomic(_ args: [String]) throws(ReplayError) -> Parsed {
        guard args.count == 1 else { throw bad("usage: ATOMIC <count>, then that many PUB commands") }
        guard let count = Int(args[0]), (1...ProtocolLimits.maxAtomicEvents).contains(count) else {
            throw bad("ATOMIC takes a count of 1 to \(ProtocolLimits.maxAtomicEvents) PUB commands")
        }
        return .beginAtomic(count: count)
    }

    private static func fail(_ args: [String]) throws(ReplayError) -> Parsed {
        guard args.count == 2 else { throw bad("usage: FAIL <stream> <bytes>, then the message") }
        return .needsPayload(.fail(stream: args[0]), size: try size(args[1]))
    }

    private static func reset(_ args: [String]) throws(ReplayError) -> Parsed {
        guard args.count == 1 || (args.count == 2 && ["keep", "drop"].contains(args[1].lowercased())) else {
            throw bad("usage: RESET <stream> [keep|drop]")
        }
        return .command(.reset(stream: args[0], keepHistory: args.count == 1 || args[1].lowercased() == "keep"))
    }

    private static func create(_ args: [String]) throws(ReplayError) -> Parsed {
        guard let stream = args.first else {
            throw bad(
                "usage: CREATE <stream> [capacity=<n>|unlimited] [max_bytes=<n>] [max_age=<seconds>] [keep_unacked=<n>] [event_ttl=<seconds>]"
                    + " [compact=yes [tombstone_retention=<seconds>]]"
                    + " [connect=eager|lazy|refcount source=<bytes>]")
        }
        let (options, sourceSize) = try createOptions(args.dropFirst())
        if let sourceSize { return .needsPayload(.create(stream: stream, options: options), size: sourceSize) }
        return .command(.create(stream: stream, options: options))
    }

    private static func derive(_ args: [String]) throws(ReplayError) -> Parsed {
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
    }

    static func bad(_ message: String) -> ReplayError {
        ReplayError(.badCommand, message)
    }

    static func size(_ text: String) throws(ReplayError) -> Int {
        guard let size = Int(text), size >= 0 else { throw bad("'\(text.prefix(32))' is not a byte count") }
        return size
    }

    static func number(_ text: String, _ what: String) throws(ReplayError) -> UInt64 {
        guard let value = UInt64(text) else { throw bad("\(what) must be a whole number, got '\(text.prefix(32))'") }
        return value
    }

    /// A number of seconds: up to a day, with a fraction.
    static func seconds(_ text: String, _ what: String, allowZero: Bool) throws(ReplayError) -> Double {
        guard let value = Double(text), value.isFinite, allowZero ? value >= 0 : value > 0, value <= 86_400 else {
            throw bad("\(what) is a number of seconds, \(allowZero ? "0" : "more than 0") to 86400")
        }
        return value
    }

    /// A verb that names one stream, given a pattern: said as such, not as a bad name.
    static func notAPattern(_ target: String, _ verb: String) throws(ReplayError) {
        if StreamPattern.isPattern(target) {
            throw bad("\(verb) takes one stream's name, not a pattern ('\(target.prefix(64))'): a group is kept per stream")
        }
    }

    /// `expect=<seq>`, `producer=<id> epoch=<n> pseq=<n>` (the three together), `key=<key>`,
    /// `trace=<traceparent>`, `ttl=<seconds>`, and `delay=<seconds>` or `at=<time>`, in any order.
    private static func publishChecks(_ words: ArraySlice<String>) throws(ReplayError) -> (AppendConditions, DueTime?) {
        var checks = AppendConditions()
        var due: DueTime?
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
            case "trace":
                guard let trace = TraceParent(parts[1]) else { throw bad("trace= takes \(TraceParent.format), got '\(parts[1].prefix(64))'") }
                checks.traceParent = trace
            case "key":
                guard let key = EventKey(parts[1]) else { throw bad("key= takes \(EventKey.format), got '\(parts[1].prefix(64))'") }
                checks.key = key
            case "ttl":
                guard let ttl = EventTTL(Substring(parts[1])) else { throw bad("ttl= takes \(EventTTL.rangeMessage), got '\(parts[1].prefix(64))'") }
                checks.ttl = ttl
            case "delay", "at":
                guard due == nil else { throw bad("a PUB takes one of delay= and at=") }
                guard let time = parts[0].lowercased() == "delay" ? DueTime.delay(parts[1]) : DueTime.time(parts[1]) else {
                    throw bad("a scheduled PUB takes \(DueTime.format), got '\(word.prefix(64))'")
                }
                due = time
            default:
                throw bad("unknown PUB option '\(parts[0].prefix(32))'; PUB takes expect=, producer=, epoch=, pseq=, key=, trace=, ttl=, delay= and at=")
            }
        }
        switch (producer, epoch, pseq) {
        case (nil, nil, nil): break
        case (let id?, let epoch?, let pseq?): checks.producer = ProducerStamp(id: id, epoch: epoch, sequence: pseq)
        default: throw bad("producer=, epoch= and pseq= go together")
        }
        return (checks, due)
    }

    /// A producer id or a consumer name: 1 to 200 bytes of one word.
    static func name(_ text: String, _ what: String) throws(ReplayError) -> String {
        guard !text.isEmpty, text.utf8.count <= ProtocolLimits.maxNameLength else {
            throw bad("\(what) has 1 to \(ProtocolLimits.maxNameLength) bytes")
        }
        return text
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
            case "event_ttl":
                guard let ttl = EventTTL(Substring(value)) else { throw bad("event_ttl is \(EventTTL.rangeMessage)") }
                options.eventTTL = ttl.seconds
            case "compact":
                switch value.lowercased() {
                case "yes": options.compact = true
                case "no": options.compact = false
                default: throw bad("compact is yes or no")
                }
            case "tombstone_retention":
                guard let seconds = Double(value), seconds.isFinite, seconds >= 0 else {
                    throw bad("tombstone_retention is a number of seconds, 0 or more")
                }
                options.tombstoneRetention = seconds
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
        // Without `connect=`, a source's mode is the daemon's choice (lazy; eager for a
        // scheduled source).
        if options.connect != nil, sourceSize == nil {
            throw bad("connect=<mode> needs source=<bytes>")
        }
        if options.tombstoneRetention != nil, !options.compact {
            throw bad("tombstone_retention=<seconds> needs compact=yes")
        }
        return (options, sourceSize)
    }
}
