import NIOCore
import ReplayModel

extension ClientCommand {
    /// Appends the command's bytes to `buffer`, as a client sends it.
    public func write(into buffer: inout ByteBuffer) {
        switch self {
        case .publish(let stream, let payload):
            buffer.writeStaticString("PUB ")
            buffer.writeString(stream)
            buffer.writeSpace()
            buffer.writeDecimal(UInt(payload.readableBytes))
            buffer.writeStaticString("\r\n")
            Wire.writePayload(payload, into: &buffer)
        case .publishChecked(let stream, let payload, let checks):
            // Written in place like a plain PUB: a producer sends one per event.
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
            buffer.writeSpace()
            buffer.writeDecimal(UInt(payload.readableBytes))
            buffer.writeStaticString("\r\n")
            Wire.writePayload(payload, into: &buffer)
        case .atomic(let events):
            Wire.writeLine(["ATOMIC", "\(events.count)"], into: &buffer)
            for event in events {
                ClientCommand.publishChecked(stream: event.stream, payload: event.payload, checks: AppendConditions(expectedLastSequence: event.expect))
                    .write(into: &buffer)
            }
        case .subscribe(let stream, let sid, let start):
            Wire.writeLine(["SUB", stream, sid, start.wireText], into: &buffer)
        case .subscribePattern(let pattern, let sid, let start):
            Wire.writeLine(["SUB", pattern.description, sid, start.wireText], into: &buffer)
        case .subscribeDurable(let stream, let sid, let start, let consumer):
            Wire.writeLine(["SUB", stream, sid, start.wireText, "durable=\(consumer)"], into: &buffer)
        case .filtered(let subscription, let program):
            // The SUB's line with `filter=<bytes>` before its line end, then the program.
            let bytes = ByteBuffer(string: program)
            var line = ByteBuffer()
            subscription.write(into: &line)
            line.moveWriterIndex(to: line.writerIndex - 2)
            buffer.writeBuffer(&line)
            buffer.writeString(" filter=\(bytes.readableBytes)\r\n")
            Wire.writePayload(bytes, into: &buffer)
        case .windowed(let subscription, let window):
            // The SUB's line with one more word before its line end.
            var line = ByteBuffer()
            subscription.write(into: &line)
            line.moveWriterIndex(to: line.writerIndex - 2)
            buffer.writeBuffer(&line)
            buffer.writeString(" window=\(window)\r\n")
        case .more(let sid, let count):
            Wire.writeLine(["MORE", sid, "\(count)"], into: &buffer)
        case .ack(let sid, let sequence, let stream):
            Wire.writeLine(["ACK", sid, "\(sequence)"] + (stream.map { ["stream=\($0)"] } ?? []), into: &buffer)
        case .nack(let sid, let sequence, let stream, let delay):
            Wire.writeLine(
                ["NACK", sid, "\(sequence)"] + (stream.map { ["stream=\($0)"] } ?? []) + (delay.map { ["delay=\($0)"] } ?? []), into: &buffer)
        case .subscribeGroup(let stream, let sid, let start, let options):
            Wire.writeLine(["SUB", stream, sid, start.wireText] + options.words, into: &buffer)
        case .subscribePatternGroup(let pattern, let sid, let start, let options):
            Wire.writeLine(["SUB", pattern.description, sid, start.wireText] + options.words, into: &buffer)
        case .subscriptions:
            Wire.writeLine(["SUBSCRIPTIONS"], into: &buffer)
        case .groups(let stream):
            Wire.writeLine(["GROUPS", stream], into: &buffer)
        case .pending(let stream, let group):
            Wire.writeLine(["PENDING", stream, group], into: &buffer)
        case .deleteGroup(let stream, let group):
            Wire.writeLine(["DELGROUP", stream, group], into: &buffer)
        case .consumers(let stream):
            Wire.writeLine(["CONSUMERS", stream], into: &buffer)
        case .deleteConsumer(let stream, let name):
            Wire.writeLine(["DELCONSUMER", stream, name], into: &buffer)
        case .unsubscribe(let sid):
            Wire.writeLine(["UNSUB", sid], into: &buffer)
        case .create(let stream, let options):
            var words = ["CREATE", stream]
            switch options.capacity {
            case .count(let n): words.append("capacity=\(n)")
            case .unlimited: words.append("capacity=unlimited")
            case nil: break
            }
            if let maxBytes = options.maxBytes { words.append("max_bytes=\(maxBytes)") }
            if let keep = options.keepUnacked { words.append("keep_unacked=\(keep)") }
            if let maxAge = options.maxAge { words.append("max_age=\(maxAge)") }
            for (key, value) in options.sourceOptions.sorted(by: { $0.key < $1.key }) { words.append("\(key)=\(value)") }
            if let source = options.source {
                let command = ByteBuffer(string: source)
                words.append("connect=\(options.connect ?? CreateOptions.defaultConnect)")
                words.append("source=\(command.readableBytes)")
                Wire.writeLine(words, into: &buffer)
                Wire.writePayload(command, into: &buffer)
            } else {
                Wire.writeLine(words, into: &buffer)
            }
        case .delete(let stream):
            Wire.writeLine(["DELETE", stream], into: &buffer)
        case .info(let stream):
            Wire.writeLine(["INFO", stream], into: &buffer)
        case .list:
            Wire.writeLine(["LIST"], into: &buffer)
        case .complete(let stream):
            Wire.writeLine(["COMPLETE", stream], into: &buffer)
        case .fail(let stream, let message):
            let bytes = ByteBuffer(string: message)
            Wire.writeLine(["FAIL", stream, "\(bytes.readableBytes)"], into: &buffer)
            Wire.writePayload(bytes, into: &buffer)
        case .reset(let stream, let keepHistory):
            Wire.writeLine(["RESET", stream, keepHistory ? "keep" : "drop"], into: &buffer)
        case .derive(let stream, let definition, let options):
            let bytes = ByteBuffer(string: definition)
            Wire.writeLine(["DERIVE", stream] + options.words + ["\(bytes.readableBytes)"], into: &buffer)
            Wire.writePayload(bytes, into: &buffer)
        case .derivations:
            Wire.writeLine(["DERIVATIONS"], into: &buffer)
        case .ping:
            Wire.writeLine(["PING"], into: &buffer)
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
