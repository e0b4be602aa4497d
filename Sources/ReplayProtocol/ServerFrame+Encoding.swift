import NIOCore
import ReplayModel

extension ServerFrame {
    /// The longest `published(sequence:)` frame: `+OK `, 20 digits, CRLF.
    public static let publishedMaximumBytes = 26

    /// Appends `published(sequence:)`'s bytes to `buffer`, for a writer that keeps PUBs'
    /// answers as their sequence numbers. One per PUB: in one piece, as EVENT frames are
    /// (`FrameBytes`).
    public static func writePublished(_ sequence: UInt64, into buffer: inout ByteBuffer) {
        buffer.writeFrame(maximumBytes: publishedMaximumBytes) { frame in
            frame.put("+OK " as StaticString)
            frame.putDecimal(sequence)
            frame.put("\r\n" as StaticString)
        }
    }

    /// Appends the frame's bytes to `buffer`.
    public func write(into buffer: inout ByteBuffer) {
        switch self {
        case .hello(let version, let maxPayload):
            Wire.writeLine(["HELLO", "replay", version, "proto=1", "max_payload=\(maxPayload)"], into: &buffer)
        case .ok:
            // An ACK's reply, once per acknowledged event: no array of words to join.
            buffer.writeStaticString("+OK\r\n")
        case .published(let sequence):
            Self.writePublished(sequence, into: &buffer)
        case .publishedAll(let sequences):
            buffer.writeStaticString("+OK")
            for sequence in sequences {
                buffer.writeSpace()
                buffer.writeDecimal(sequence)
            }
            buffer.writeStaticString("\r\n")
        case .error(let error):
            Wire.writeLine(["-ERR", error.code.rawValue, error.oneLineMessage], into: &buffer)
        case .pong:
            buffer.writeStaticString("PONG\r\n")
        case .info(let json):
            Wire.writeLine(["+INFO", "\(json.readableBytes)"], into: &buffer)
            Wire.writePayload(json, into: &buffer)
        case .list(let json):
            Wire.writeLine(["+LIST", "\(json.readableBytes)"], into: &buffer)
            Wire.writePayload(json, into: &buffer)
        case .event(let stream, let sid, let sequence, let time, let payload, let traceParent, let hash, let key):
            let link = hash.flatMap { EventHash(hex: $0) }
            let trace = traceParent.map { Array($0.utf8) }
            let key = key.map { Array($0.utf8) }
            payload.withUnsafeReadableBytes { bytes in
                Self.withOptionalBytes(trace) { trace in
                    Self.withOptionalBytes(key) { key in
                        Self.writeEvent(
                            stream: stream, sid: sid, sequence: sequence, time: time.utf8, payload: bytes, trace: trace, hash: link, key: key,
                            into: &buffer)
                    }
                }
            }
        case .completed(let stream, let sid, let last):
            Wire.writeLine(["COMPLETED", stream, sid, "\(last)"], into: &buffer)
        case .failed(let stream, let sid, let last, let message):
            let bytes = ByteBuffer(string: message)
            Wire.writeLine(["FAILED", stream, sid, "\(last)", "\(bytes.readableBytes)"], into: &buffer)
            Wire.writePayload(bytes, into: &buffer)
        case .gap(let stream, let sid, let from, let through):
            buffer.writeStaticString("GAP ")
            buffer.writeString(stream)
            buffer.writeSpace()
            buffer.writeString(sid)
            buffer.writeSpace()
            buffer.writeDecimal(from)
            buffer.writeSpace()
            buffer.writeDecimal(through)
            buffer.writeStaticString("\r\n")
        case .subscriptionError(let stream, let sid, let error):
            // The message is the rest of the line, as in `-ERR`.
            Wire.writeLine(["ERROR", stream, sid, error.code.rawValue, error.oneLineMessage], into: &buffer)
        }
    }

    /// Writes an `EVENT` frame from its parts, without building a `ServerFrame` (the
    /// server writes catch-up pages straight from the store's row buffers), in one write.
    /// `trace`: the event's trace context, if it has one; `hash`: its hash-chain link, for
    /// a subscription that asked; `key`: its key, if it has one.
    public static func writeEvent(
        stream: String, sid: String, sequence: UInt64, time: some Collection<UInt8>,
        payload: UnsafeRawBufferPointer, trace: UnsafeRawBufferPointer? = nil, hash: EventHash? = nil, key: UnsafeRawBufferPointer? = nil,
        into buffer: inout ByteBuffer
    ) {
        let bound = eventLineBound(stream: stream, sid: sid, time: time, trace: trace, key: key) + payload.count + 2
        buffer.writeFrame(maximumBytes: bound) { frame in
            putEventLine(
                stream: stream, sid: sid, sequence: sequence, time: time, size: payload.count, trace: trace, hash: hash, key: key, into: &frame)
            frame.put(payload)
            frame.put("\r\n" as StaticString)
        }
    }

    /// An `EVENT` control line alone: the payload (`size` bytes) and its line end follow in
    /// buffers of their own, so that every subscriber's frame can share one payload buffer.
    public static func writeEventLine(
        stream: String, sid: String, sequence: UInt64, time: some Collection<UInt8>, size: Int,
        trace: UnsafeRawBufferPointer? = nil, hash: EventHash? = nil, key: UnsafeRawBufferPointer? = nil, into buffer: inout ByteBuffer
    ) {
        buffer.writeFrame(maximumBytes: eventLineBound(stream: stream, sid: sid, time: time, trace: trace, key: key)) { frame in
            putEventLine(stream: stream, sid: sid, sequence: sequence, time: time, size: size, trace: trace, hash: hash, key: key, into: &frame)
        }
    }

    /// The longest an `EVENT` line of these parts can be: `EVENT `, four spaces, two numbers
    /// of at most 20 digits and the line end; ` key=` and the key, ` trace=` and the trace
    /// context after; room for ` hash=` and its 64 digits.
    private static func eventLineBound(
        stream: String, sid: String, time: some Collection<UInt8>, trace: UnsafeRawBufferPointer?, key: UnsafeRawBufferPointer?
    ) -> Int {
        stream.utf8.count + sid.utf8.count + time.count + 52 + (key.map { $0.count + 5 } ?? 0) + (trace.map { $0.count + 7 } ?? 0) + 70
    }

    /// `body` with `bytes`' buffer, or with `nil`.
    private static func withOptionalBytes<T>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> T) -> T {
        guard let bytes else { return body(nil) }
        return bytes.withUnsafeBytes { body($0) }
    }

    private static func putEventLine(
        stream: String, sid: String, sequence: UInt64, time: some Collection<UInt8>, size: Int, trace: UnsafeRawBufferPointer?,
        hash: EventHash?, key: UnsafeRawBufferPointer?, into frame: inout FrameBytes
    ) {
        frame.put("EVENT " as StaticString)
        frame.put(stream)
        frame.put(UInt8(ascii: " "))
        frame.put(sid)
        frame.put(UInt8(ascii: " "))
        frame.putDecimal(sequence)
        frame.put(UInt8(ascii: " "))
        frame.put(time)
        frame.put(UInt8(ascii: " "))
        frame.putDecimal(UInt(size))
        if let key {
            frame.put(" key=" as StaticString)
            frame.put(key)
        }
        if let trace {
            frame.put(" trace=" as StaticString)
            frame.put(trace)
        }
        if let hash {
            frame.put(" hash=" as StaticString)
            for word in [hash.words.0, hash.words.1, hash.words.2, hash.words.3] {
                for shift in stride(from: 60, through: 0, by: -4) { frame.put(Self.hexDigits[Int((word >> UInt64(shift)) & 0xF)]) }
            }
        }
        frame.put("\r\n" as StaticString)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The frame as a buffer of its own.
    public var bytes: ByteBuffer {
        var buffer = ByteBuffer()
        write(into: &buffer)
        return buffer
    }
}
