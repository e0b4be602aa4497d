import NIOCore

extension ServerFrame {
    /// Appends the frame's bytes to `buffer`.
    public func write(into buffer: inout ByteBuffer) {
        switch self {
        case .hello(let version, let maxPayload):
            Wire.writeLine(["HELLO", "replay", version, "proto=1", "max_payload=\(maxPayload)"], into: &buffer)
        case .ok:
            Wire.writeLine(["+OK"], into: &buffer)
        case .published(let sequence):
            Wire.writeLine(["+OK", "\(sequence)"], into: &buffer)
        case .error(let error):
            // The message is the rest of the line: keep it on one line.
            let message = error.message.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
            Wire.writeLine(["-ERR", error.code.rawValue, message], into: &buffer)
        case .pong:
            Wire.writeLine(["PONG"], into: &buffer)
        case .info(let json):
            Wire.writeLine(["+INFO", "\(json.readableBytes)"], into: &buffer)
            Wire.writePayload(json, into: &buffer)
        case .list(let json):
            Wire.writeLine(["+LIST", "\(json.readableBytes)"], into: &buffer)
            Wire.writePayload(json, into: &buffer)
        case .event(let stream, let sid, let sequence, let time, let payload):
            Wire.writeLine(["EVENT", stream, sid, "\(sequence)", time, "\(payload.readableBytes)"], into: &buffer)
            Wire.writePayload(payload, into: &buffer)
        case .completed(let stream, let sid, let last):
            Wire.writeLine(["COMPLETED", stream, sid, "\(last)"], into: &buffer)
        case .failed(let stream, let sid, let last, let message):
            let bytes = ByteBuffer(string: message)
            Wire.writeLine(["FAILED", stream, sid, "\(last)", "\(bytes.readableBytes)"], into: &buffer)
            Wire.writePayload(bytes, into: &buffer)
        case .gap(let stream, let sid, let from, let through):
            Wire.writeLine(["GAP", stream, sid, "\(from)", "\(through)"], into: &buffer)
        }
    }

    /// The frame as a buffer of its own.
    public var bytes: ByteBuffer {
        var buffer = ByteBuffer()
        write(into: &buffer)
        return buffer
    }
}
