import NIOCore

/// The shared shape of both directions: a text control line ending in LF (CRLF accepted),
/// optionally followed by a payload of exactly the byte count the line announced, itself
/// followed by a line end. Binary-safe, pipelinable, and typeable in `socat`.
enum Wire {
    static let lf = UInt8(ascii: "\n")
    static let cr = UInt8(ascii: "\r")

    /// Takes one control line (without its line end) from `buffer`, or returns `nil` if the
    /// line is not complete yet. Throws `lineTooLong` once more than `maxLength` bytes
    /// arrived without a line end.
    static func readLine(_ buffer: inout ByteBuffer, maxLength: Int) throws(ReplayError) -> ByteBuffer? {
        let view = buffer.readableBytesView
        let searchEnd = view.startIndex + min(view.count, maxLength + 2)
        guard let newline = view[view.startIndex..<searchEnd].firstIndex(of: lf) else {
            if view.count > maxLength + 1 {
                throw ReplayError(.lineTooLong, "control line longer than \(maxLength) bytes; closing")
            }
            return nil
        }
        var length = newline - view.startIndex
        let consumed = length + 1
        if length > 0, view[newline - 1] == cr { length -= 1 }
        let line = buffer.getSlice(at: buffer.readerIndex, length: length)!
        buffer.moveReaderIndex(forwardBy: consumed)
        return line
    }

    /// Takes a payload of `size` bytes and its line end, or returns `nil` until all of it
    /// arrived. Throws `badFrame` if the payload is not followed by a line end: the byte
    /// count was wrong and nothing after it can be trusted.
    static func readPayload(_ buffer: inout ByteBuffer, size: Int) throws(ReplayError) -> ByteBuffer? {
        guard buffer.readableBytes > size else { return nil }
        let after = buffer.getInteger(at: buffer.readerIndex + size, as: UInt8.self)!
        let terminator: Int
        if after == lf {
            terminator = 1
        } else if after == cr {
            guard buffer.readableBytes > size + 1 else { return nil }
            guard buffer.getInteger(at: buffer.readerIndex + size + 1, as: UInt8.self) == lf else {
                throw badTerminator(size)
            }
            terminator = 2
        } else {
            throw badTerminator(size)
        }
        let payload = buffer.readSlice(length: size)!
        buffer.moveReaderIndex(forwardBy: terminator)
        return payload
    }

    private static func badTerminator(_ size: Int) -> ReplayError {
        ReplayError(.badFrame, "payload of \(size) bytes was not followed by a line end; the byte count is wrong; closing")
    }

    /// Splits a control line into words (spaces and tabs).
    static func words(_ line: ByteBuffer) -> [Substring] {
        let text = String(decoding: line.readableBytesView, as: UTF8.self)
        // Split the bytes, not the characters: grapheme breaking costs more than the rest.
        return text.utf8.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }).map { Substring($0) }
    }

    // MARK: Writing

    static func writeLine(_ words: [String], into buffer: inout ByteBuffer) {
        buffer.writeString(words.joined(separator: " "))
        buffer.writeStaticString("\r\n")
    }

    static func writePayload(_ payload: ByteBuffer, into buffer: inout ByteBuffer) {
        var payload = payload
        buffer.writeBuffer(&payload)
        buffer.writeStaticString("\r\n")
    }
}
