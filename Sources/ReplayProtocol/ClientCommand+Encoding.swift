import NIOCore
import ReplayModel

extension ClientCommand {
    /// Appends the command's bytes to `buffer`, as a client sends it.
    public func write(into buffer: inout ByteBuffer) {
        switch self {
        case .publish(let stream, let payload):
            // Written in place, without the words of `controlLine`: a producer sends one per event.
            buffer.writeStaticString("PUB ")
            buffer.writeString(stream)
            buffer.writeSpace()
            buffer.writeDecimal(UInt(payload.readableBytes))
            buffer.writeStaticString("\r\n")
            Wire.writePayload(payload, into: &buffer)
        case .publishChecked(let stream, let payload, let checks):
            buffer.writeStaticString("PUB ")
            buffer.writeString(stream)
            if let expect = checks.expectedLastSequence {
                buffer.writeStaticString(" expect=")
                buffer.writeDecimal(expect)
            }
            if let producer = checks.producer {
                buffer.writeStaticString(" producer=")
                buffer.writeString(producer.id)
                buffer.writeStaticString(" epoch=")
                buffer.writeDecimal(producer.epoch)
                buffer.writeStaticString(" pseq=")
                buffer.writeDecimal(producer.sequence)
            }
            if let key = checks.key {
                buffer.writeStaticString(" key=")
                buffer.writeBytes(key.bytes)
            }
            if let trace = checks.traceParent {
                buffer.writeStaticString(" trace=")
                buffer.writeBytes(trace.bytes)
            }
            if let ttl = checks.ttl {
                buffer.writeStaticString(" ttl=")
                buffer.writeString(ttl.text)
            }
            buffer.writeSpace()
            buffer.writeDecimal(UInt(payload.readableBytes))
            buffer.writeStaticString("\r\n")
            Wire.writePayload(payload, into: &buffer)
        case .atomic(let events):
            Wire.writeLine(controlLine, into: &buffer)
            for event in events {
                ClientCommand.publishChecked(
                    stream: event.stream, payload: event.payload,
                    checks: AppendConditions(expectedLastSequence: event.expect, traceParent: event.traceParent, key: event.key, ttl: event.ttl)
                )
                .write(into: &buffer)
            }
        default:
            Wire.writeLine(controlLine, into: &buffer)
            if let payload { Wire.writePayload(payload, into: &buffer) }
        }
    }

    /// The words of the command's control line. An ATOMIC's is the line that opens it;
    /// its PUBs follow as commands of their own.
    var controlLine: [String] {
        switch self {
        case .publish(let stream, let payload): ["PUB", stream, "\(payload.readableBytes)"]
        case .publishChecked(let stream, let payload, let checks): ["PUB", stream] + checks.words + ["\(payload.readableBytes)"]
        case .schedule(let stream, let payload, let due, let annotations):
            ["PUB", stream] + annotations.words + [due.word, "\(payload.readableBytes)"]
        case .scheduled(let stream, let limit): ["SCHEDULED", stream, "\(limit)"]
        case .unschedule(let stream, let id): ["UNSCHEDULE", stream, "\(id)"]
        case .atomic(let events): ["ATOMIC", "\(events.count)"]
        case .subscribe(let stream, let sid, let start): ["SUB", stream, sid, start.wireText]
        case .subscribePattern(let pattern, let sid, let start): ["SUB", pattern.description, sid, start.wireText]
        case .subscribeDurable(let stream, let sid, let start, let consumer): ["SUB", stream, sid, start.wireText, "durable=\(consumer)"]
        case .subscribeGroup(let stream, let sid, let start, let options): ["SUB", stream, sid, start.wireText] + options.words
        case .subscribePatternGroup(let pattern, let sid, let start, let options):
            ["SUB", pattern.description, sid, start.wireText] + options.words
        case .filtered(let subscription, let program): subscription.controlLine + ["filter=\(program.utf8.count)"]
        case .windowed(let subscription, let window): subscription.controlLine + ["window=\(window)"]
        case .hashed(let subscription): subscription.controlLine + ["hash=on"]
        case .more(let sid, let count): ["MORE", sid, "\(count)"]
        case .ack(let sid, let sequence, let stream): ["ACK", sid, "\(sequence)"] + (stream.map { ["stream=\($0)"] } ?? [])
        case .nack(let sid, let sequence, let stream, let delay):
            ["NACK", sid, "\(sequence)"] + (stream.map { ["stream=\($0)"] } ?? []) + (delay.map { ["delay=\($0)"] } ?? [])
        case .unsubscribe(let sid): ["UNSUB", sid]
        case .subscriptions: ["SUBSCRIPTIONS"]
        case .groups(let stream): ["GROUPS", stream]
        case .pending(let stream, let group): ["PENDING", stream, group]
        case .deleteGroup(let stream, let group): ["DELGROUP", stream, group]
        case .consumers(let stream): ["CONSUMERS", stream]
        case .deleteConsumer(let stream, let name): ["DELCONSUMER", stream, name]
        case .create(let stream, let options): ["CREATE", stream] + options.words
        case .delete(let stream): ["DELETE", stream]
        case .info(let stream): ["INFO", stream]
        case .latest(let stream, let key): ["GET", stream, key.text]
        case .list: ["LIST"]
        case .complete(let stream): ["COMPLETE", stream]
        case .fail(let stream, let message): ["FAIL", stream, "\(message.utf8.count)"]
        case .reset(let stream, let keepHistory): ["RESET", stream, keepHistory ? "keep" : "drop"]
        case .derive(let stream, let definition, let options): ["DERIVE", stream] + options.words + ["\(definition.utf8.count)"]
        case .derivations: ["DERIVATIONS"]
        case .backup(let path): ["BACKUP", path]
        case .verify(let streams, let through): ["VERIFY"] + streams + (through.map { ["through=\($0)"] } ?? [])
        case .ping: ["PING"]
        }
    }

    /// The bytes after the control line, for the commands that have them.
    var payload: ByteBuffer? {
        switch self {
        case .publish(_, let payload), .publishChecked(_, let payload, _), .schedule(_, let payload, _, _): payload
        case .filtered(_, let program): ByteBuffer(string: program)
        case .create(_, let options): options.source.map { ByteBuffer(string: $0) }
        case .fail(_, let message): ByteBuffer(string: message)
        case .derive(_, let definition, _): ByteBuffer(string: definition)
        default: nil
        }
    }

    public var bytes: ByteBuffer {
        var buffer = ByteBuffer()
        write(into: &buffer)
        return buffer
    }
}

extension StartPosition {
    /// The start position as SUB's last word.
    public var wireText: String {
        switch self {
        case .all: "all"
        case .new: "new"
        case .from(let sequence): "from=\(sequence)"
        case .last(let count): "last=\(count)"
        case .since(let seconds): "since=\(seconds)"
        case .snapshot: "snapshot"
        }
    }
}

extension GroupOptions {
    /// SUB's words after the start position.
    var words: [String] {
        var words = ["group=\(group)"]
        if let member { words.append("member=\(member)") }
        if let ackWait { words.append("ack_wait=\(ackWait)") }
        if let maxDeliver { words.append("max_deliver=\(maxDeliver)") }
        if let deadLetter { words.append("dead_letter=\(deadLetter)") }
        if let maxPending { words.append("max_pending=\(maxPending)") }
        return words
    }
}

extension AppendConditions {
    /// PUB's words between the stream and the byte count.
    var words: [String] {
        var words: [String] = []
        if let expect = expectedLastSequence { words.append("expect=\(expect)") }
        if let producer { words += ["producer=\(producer.id)", "epoch=\(producer.epoch)", "pseq=\(producer.sequence)"] }
        if let key { words.append("key=\(key.text)") }
        if let traceParent { words.append("trace=\(traceParent.text)") }
        if let ttl { words.append("ttl=\(ttl.text)") }
        return words
    }
}

extension DueTime {
    /// PUB's word for it: `delay=<seconds>`, or `at=<time>` with milliseconds.
    var word: String {
        switch self {
        case .after(let seconds): "delay=\(seconds)"
        case .at(let millis): "at=\(Timestamp.format(millis: millis))"
        }
    }
}

extension CreateOptions {
    /// CREATE's words after the stream; `source=` counts the source's bytes, which follow the line.
    var words: [String] {
        var words = capacity.map { ["capacity=\($0.wireText)"] } ?? []
        if let maxBytes { words.append("max_bytes=\(maxBytes)") }
        if let keepUnacked { words.append("keep_unacked=\(keepUnacked)") }
        if let eventTTL { words.append("event_ttl=\(eventTTL)") }
        if compact { words.append("compact=yes") }
        if let tombstoneRetention { words.append("tombstone_retention=\(tombstoneRetention)") }
        if let maxAge { words.append("max_age=\(maxAge)") }
        for (key, value) in sourceOptions.sorted(by: { $0.key < $1.key }) {
            // A schedule's fields are one word on the line, joined by `_` (`CronSchedule`).
            words.append("\(key)=\(key == SourceOptions.Key.schedule.rawValue ? value.replacingOccurrences(of: " ", with: "_") : value)")
        }
        // Without `connect=`, the daemon chooses (lazy; eager for a scheduled source).
        if let source { words += (connect.map { ["connect=\($0)"] } ?? []) + ["source=\(source.utf8.count)"] }
        return words
    }
}
