import NIOCore

/// Decodes the server → client byte stream, for clients (the Swift client library and the
/// tests). It trusts the server more than the server trusts clients, but still refuses
/// anything malformed with `bad_frame` rather than guessing.
public struct ServerFrameDecoder: ByteToMessageDecoder, Sendable {
    public typealias InboundOut = ServerFrame

    private enum Awaiting: Sendable {
        case info
        case list
        case event(stream: String, sid: String, sequence: UInt64, time: String, traceParent: String?, hash: String?, key: String?)
        case failed(stream: String, sid: String, lastSequence: UInt64)
    }

    private var awaiting: (Awaiting, size: Int)?
    private var lastStream = CachedWord()
    private var lastSid = CachedWord()
    private var lastTime = CachedWord()
    public let maxLineLength: Int

    public init(maxLineLength: Int = 64 * 1024) {
        self.maxLineLength = maxLineLength
    }

    public mutating func next(_ buffer: inout ByteBuffer) throws(ReplayError) -> ServerFrame? {
        while true {
            if let (kind, size) = awaiting {
                guard let payload = try Wire.readPayload(&buffer, size: size) else { return nil }
                awaiting = nil
                switch kind {
                case .info: return .info(json: payload)
                case .list: return .list(json: payload)
                case .event(let stream, let sid, let sequence, let time, let traceParent, let hash, let key):
                    return .event(
                        stream: stream, sid: sid, sequence: sequence, time: time, payload: payload, traceParent: traceParent, hash: hash, key: key)
                case .failed(let stream, let sid, let last):
                    return .failed(stream: stream, sid: sid, lastSequence: last, message: String(decoding: payload.readableBytesView, as: UTF8.self))
                }
            }
            guard let line = try Wire.readLine(&buffer, maxLength: maxLineLength) else { return nil }
            switch try decodeHot(line) {
            case .frame(let frame): return frame
            case .awaitingPayload: continue
            case .other: break
            }
            // Every other frame (well-formed EVENT and +OK lines never get here).
            let words = Wire.words(line).map(String.init)
            guard let verb = words.first else { continue }
            let args = Array(words.dropFirst())
            switch (verb, args.count) {
            case ("HELLO", _):
                let maxPayload = args.first { $0.hasPrefix("max_payload=") }.flatMap { Int($0.dropFirst(12)) } ?? 0
                return .hello(version: args.count > 1 ? args[1] : "", maxPayload: maxPayload)
            case ("-ERR", _):
                let text = String(decoding: line.readableBytesView, as: UTF8.self)
                let rest = text.split(separator: " ", maxSplits: 2).map(String.init)
                let code = rest.count > 1 ? ReplayError.Code(rawValue: rest[1]) ?? .internal : .internal
                return .error(ReplayError(code, rest.count > 2 ? rest[2] : ""))
            case ("PONG", 0): return .pong
            case ("+INFO", 1): awaiting = (.info, try number(args[0]))
            case ("+LIST", 1): awaiting = (.list, try number(args[0]))
            case ("COMPLETED", 3):
                return .completed(stream: args[0], sid: args[1], lastSequence: try number(args[2]))
            case ("FAILED", 4):
                awaiting = (.failed(stream: args[0], sid: args[1], lastSequence: try number(args[2])), try number(args[3]))
            case ("GAP", 4):
                return .gap(stream: args[0], sid: args[1], from: try number(args[2]), through: try number(args[3]))
            case ("ERROR", 3...):
                let text = String(decoding: line.readableBytesView, as: UTF8.self)
                let message = text.split(separator: " ", maxSplits: 4).dropFirst(4).first.map(String.init) ?? ""
                return .subscriptionError(stream: args[0], sid: args[1], error: ReplayError(ReplayError.Code(rawValue: args[2]) ?? .internal, message))
            default:
                throw ReplayError(.badFrame, "unexpected frame from the server: \(verb.prefix(32))")
            }
        }
    }

    private enum HotLine {
        case frame(ServerFrame)
        /// An `EVENT` line: `awaiting` is set, its payload comes next.
        case awaitingPayload
        /// Any other line, for the general path.
        case other
    }

    /// Decodes the lines that come once per event (`EVENT`, `+OK <seq>`) without making
    /// strings, and reuses the stream, sid and time strings of the previous event.
    private mutating func decodeHot(_ line: ByteBuffer) throws(ReplayError) -> HotLine {
        try LineWords.reading(line) { (words) throws(ReplayError) in try decodeHot(&words) }
    }

    private mutating func decodeHot(_ words: inout LineWords) throws(ReplayError) -> HotLine {
        guard let verb = words.next() else { return .other }
        if LineWords.matches(verb, "EVENT") {
            guard let stream = words.next(), let sid = words.next(), let sequence = words.next(),
                let time = words.next(), let size = words.next()
            else { return .other }
            // After the size, `name=value` words: `key=`, `trace=`, `hash=`, and any a later
            // server adds, which this client skips.
            var traceParent: String?
            var hash: String?
            var eventKey: String?
            while let word = words.next() {
                guard let (name, value) = LineWords.keyValue(word) else { return .other }
                if LineWords.matches(name, "trace") { traceParent = LineWords.string(value) }
                if LineWords.matches(name, "hash") { hash = LineWords.string(value) }
                if LineWords.matches(name, "key") { eventKey = LineWords.string(value) }
            }
            let event = Awaiting.event(
                stream: lastStream.string(stream), sid: lastSid.string(sid),
                sequence: try number(sequence), time: lastTime.string(time), traceParent: traceParent, hash: hash, key: eventKey)
            awaiting = (event, Int(try number(size, as: UInt32.self)))
            return .awaitingPayload
        }
        if LineWords.matches(verb, "+OK") {
            guard let sequence = words.next() else { return .frame(.ok) }
            guard !words.atEnd() else { return .frame(.published(sequence: try number(sequence))) }
            var sequences: [UInt64] = [try number(sequence)]
            while let next = words.next() { sequences.append(try number(next)) }
            return .frame(.publishedAll(sequences))
        }
        return .other
    }

    private func number<T: FixedWidthInteger & UnsignedInteger>(_ word: LineWords.Word, as: T.Type = T.self) throws(ReplayError) -> T {
        guard let value = LineWords.integer(word, as: T.self) else {
            throw ReplayError(.badFrame, "bad number '\(LineWords.string(word).prefix(32))' in a server frame")
        }
        return value
    }

    private func number<T: FixedWidthInteger>(_ text: String) throws(ReplayError) -> T {
        guard let value = T(text) else { throw ReplayError(.badFrame, "bad number '\(text.prefix(32))' in a server frame") }
        return value
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let frame = try next(&buffer) else { return .needMoreData }
        context.fireChannelRead(Self.wrapInboundOut(frame))
        return .continue
    }

    public mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while let frame = try next(&buffer) {
            context.fireChannelRead(Self.wrapInboundOut(frame))
        }
        return .needMoreData
    }
}
