import NIOCore
import ReplayModel

/// What the server's decoder produces: a command, or a recoverable error to answer in
/// order while the connection goes on.
public enum InboundCommand: Sendable, Equatable {
    case command(ClientCommand)
    case invalid(ReplayError)
}

/// Decodes the client → server byte stream into commands.
///
/// An explicit read state: a control line, then (for PUB, FAIL and CREATE with a source)
/// exactly the announced payload. Limits: a control line longer than `maxLineLength` is
/// fatal (the stream cannot be resynchronised without a line end); a payload larger than
/// `maxPayload` is skipped without being buffered and answered with `payload_too_large`,
/// and the connection carries on. A payload not followed by a line end is fatal.
public struct CommandDecoder: NIOSingleStepByteToMessageDecoder, Sendable {
    public typealias InboundOut = InboundCommand

    enum State: Equatable {
        case line
        case payload(CommandParser.AwaitingPayload, size: Int)
        /// Discarding an oversize payload: bytes still to drop, then its line end.
        case skipping(remaining: Int)
        case skippingLineEnd
    }

    /// An `ATOMIC` send being read: its PUBs so far, how many are still to come, and the
    /// first problem (the whole send is then refused, once all its commands are read).
    struct AtomicSend: Equatable {
        var remaining: Int
        var events: [AtomicEvent] = []
        var bytes = 0
        var problem: ReplayError?
    }

    public let maxLineLength: Int
    public let maxPayload: Int
    private(set) var state = State.line
    private(set) var atomic: AtomicSend?

    public init(maxLineLength: Int = ProtocolLimits.maxLineLength, maxPayload: Int = ProtocolLimits.maxPayload) {
        self.maxLineLength = maxLineLength
        self.maxPayload = maxPayload
    }

    /// Decodes the next command from `buffer`, or returns `nil` when more bytes are needed.
    /// Throws only fatal errors. The PUBs of an `ATOMIC` send come out as one command.
    public mutating func next(_ buffer: inout ByteBuffer) throws(ReplayError) -> InboundCommand? {
        while let inbound = try nextSingle(&buffer) {
            guard var send = atomic else { return inbound }
            switch inbound {
            case .command(.publish(let stream, let payload)):
                send.add(AtomicEvent(stream: stream, payload: payload))
            case .command(.publishChecked(let stream, let payload, let checks)) where checks.producer == nil:
                send.add(
                    AtomicEvent(
                        stream: stream, payload: payload, expect: checks.expectedLastSequence, traceParent: checks.traceParent, key: checks.key,
                        ttl: checks.ttl))
            case .command(.schedule):
                send.refuse(CommandParser.bad("an ATOMIC send's PUBs are appended now: delay= and at= are refused in it"))
            case .command(let command):
                send.refuse(CommandParser.bad("an ATOMIC send holds only PUB commands (without producer fields), not \(command.verb)"))
            case .invalid(let error):
                send.refuse(error)
            }
            send.remaining -= 1
            guard send.remaining == 0 else {
                atomic = send
                continue
            }
            atomic = nil
            if let problem = send.problem { return .invalid(problem) }
            return .command(.atomic(send.events))
        }
        return nil
    }

    private mutating func nextSingle(_ buffer: inout ByteBuffer) throws(ReplayError) -> InboundCommand? {
        while true {
            switch state {
            case .line:
                guard let line = try Wire.readLine(&buffer, maxLength: maxLineLength) else { return nil }
                let parsed: CommandParser.Parsed
                do {
                    if let publish = Self.publishLine(line) {
                        parsed = publish
                    } else {
                        let words = Wire.words(line)
                        if words.isEmpty { continue }  // blank lines, as a person in socat types them
                        parsed = try CommandParser.parse(words)
                    }
                } catch {
                    return .invalid(error)
                }
                switch parsed {
                case .command(let command):
                    return .command(command)
                case .beginAtomic(let count):
                    guard atomic == nil else { return .invalid(CommandParser.bad("ATOMIC sends do not nest")) }
                    atomic = AtomicSend(remaining: count)
                case .needsPayload(let awaiting, let size):
                    guard size <= maxPayload else {
                        state = .skipping(remaining: size)
                        return .invalid(
                            ReplayError(
                                .payloadTooLarge,
                                "payload of \(size) bytes is over the limit of \(maxPayload) bytes; it was discarded"))
                    }
                    // Usually the payload came in the same read as its line: taken now,
                    // the state (whose payload case holds a command's options) is not
                    // written and read back once per event. A bad line end is fatal here
                    // as in `.payload`.
                    if let payload = try Wire.readPayload(&buffer, size: size) {
                        return .command(awaiting.complete(with: payload))
                    }
                    state = .payload(awaiting, size: size)
                case .refusedPayload(let error, let size):
                    state = .skipping(remaining: size)
                    return .invalid(error)
                }
            case .payload(let awaiting, let size):
                guard let payload = try Wire.readPayload(&buffer, size: size) else { return nil }
                state = .line
                return .command(awaiting.complete(with: payload))
            case .skipping(let remaining):
                let dropped = min(remaining, buffer.readableBytes)
                buffer.moveReaderIndex(forwardBy: dropped)
                guard dropped == remaining else {
                    state = .skipping(remaining: remaining - dropped)
                    return nil
                }
                state = .skippingLineEnd
            case .skippingLineEnd:
                guard let byte = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else { return nil }
                if byte == Wire.cr {
                    guard buffer.readableBytes >= 2 else { return nil }
                    buffer.moveReaderIndex(forwardBy: 1)
                }
                if buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) == Wire.lf {
                    buffer.moveReaderIndex(forwardBy: 1)
                }
                state = .line
            }
        }
    }

    /// A well-formed `PUB <stream> [expect=<seq>] [producer=<id> epoch=<n> pseq=<n>] [key=<key>] [trace=<traceparent>] [ttl=<s>] <bytes>`
    /// line, read without splitting it into strings (it comes once per event); anything
    /// else, including a malformed PUB, goes through `CommandParser` and its error messages.
    private static func publishLine(_ line: ByteBuffer) -> CommandParser.Parsed? {
        try? LineWords.reading(line) { words in publishLine(&words) }
    }

    private static func publishLine(_ words: inout LineWords) -> CommandParser.Parsed? {
        guard let verb = words.next(), LineWords.matches(verb, "PUB"), let stream = words.next(),
            var last = words.next()
        else { return nil }
        var checks = AppendConditions()
        var producerID: LineWords.Word?
        var epoch: UInt64?
        var pseq: UInt64?
        // Each option read sets a check or refuses the line: without one, the line is a plain
        // `PUB <stream> <bytes>` (the usual one), known without comparing the checks.
        var hasOptions = false
        while let word = words.next() {
            hasOptions = true
            // `last` was an option: every word but the last is one.
            guard let (key, value) = LineWords.keyValue(last) else { return nil }
            if LineWords.matches(key, "expect"), checks.expectedLastSequence == nil, let n = LineWords.integer(value, as: UInt64.self) {
                checks.expectedLastSequence = n
            } else if LineWords.matches(key, "producer"), producerID == nil, !value.isEmpty, value.count <= ProtocolLimits.maxNameLength {
                producerID = value
            } else if LineWords.matches(key, "epoch"), epoch == nil, let n = LineWords.integer(value, as: UInt64.self) {
                epoch = n
            } else if LineWords.matches(key, "pseq"), pseq == nil, let n = LineWords.integer(value, as: UInt64.self) {
                pseq = n
            } else if LineWords.matches(key, "trace"), checks.traceParent == nil, let trace = TraceParent(LineWords.string(value)) {
                checks.traceParent = trace
            } else if LineWords.matches(key, "key"), checks.key == nil, let eventKey = EventKey(LineWords.string(value)) {
                checks.key = eventKey
            } else if LineWords.matches(key, "ttl"), checks.ttl == nil, let ttl = EventTTL(Substring(LineWords.string(value))) {
                checks.ttl = ttl
            } else {
                return nil
            }
            last = word
        }
        guard let size = LineWords.integer(last, as: UInt32.self) else { return nil }
        switch (producerID, epoch, pseq) {
        case (nil, nil, nil): break
        case (let id?, let epoch?, let pseq?): checks.producer = ProducerStamp(id: LineWords.string(id), epoch: epoch, sequence: pseq)
        default: return nil
        }
        let name = LineWords.string(stream)
        if !hasOptions { return .needsPayload(.publish(stream: name), size: Int(size)) }
        return .needsPayload(.publishChecked(stream: name, checks: checks), size: Int(size))
    }

    public mutating func decode(buffer: inout ByteBuffer) throws -> InboundCommand? {
        try next(&buffer)
    }

    /// A client that disappears mid-frame leaves a partial command: it is dropped, and
    /// only complete commands before it were acted on.
    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> InboundCommand? {
        if let inbound = try next(&buffer) { return inbound }
        buffer.clear()
        return nil
    }
}

extension CommandDecoder.AtomicSend {
    mutating func add(_ event: AtomicEvent) {
        bytes += event.payload.readableBytes
        guard problem == nil else { return }
        guard bytes <= ProtocolLimits.maxAtomicBytes else {
            return refuse(ReplayError(.payloadTooLarge, "an ATOMIC send carries at most \(ProtocolLimits.maxAtomicBytes) payload bytes"))
        }
        events.append(event)
    }

    mutating func refuse(_ error: ReplayError) {
        if problem == nil { problem = error }
        events = []
    }
}
