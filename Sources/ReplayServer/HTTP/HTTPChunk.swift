import NIOCore

/// HTTP/1.1 chunked transfer coding (RFC 9112 §7.1) for a response written below NIO's
/// HTTP encoder, as a parked SSE reader writes its chunks (`ParkedEventStream`).
///
/// Why by hand: `HTTPResponseEncoder` writes each body part as three buffers (the size line,
/// the part, its CRLF), and with a promise as three more promises joined into the caller's;
/// for an SSE reader that writes a chunk per commit, those were a fifth of its CPU. Here the
/// chunk's text is written after room left for its size line, which is filled in once the
/// text is written: one buffer, one write.
enum HTTPChunk {
    /// The size line: the size in 8 hex digits (RFC 9112 allows leading zeros), then CRLF.
    private static let sizeLineBytes = 10

    /// One chunk holding what `write` writes, which must be something: an empty chunk is
    /// the last one, which ends the body.
    static func framing(_ write: (inout ByteBuffer) -> Void) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeRepeatingByte(UInt8(ascii: "0"), count: sizeLineBytes - 2)
        buffer.writeStaticString("\r\n")
        write(&buffer)
        let size = buffer.writerIndex - sizeLineBytes
        precondition(size > 0 && size <= UInt32.max, "a chunk of \(size) bytes")
        var digits = size
        for place in stride(from: 7, through: 0, by: -1) {
            let digit = UInt8(digits & 0xF)
            buffer.setInteger(digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10, at: place)
            digits >>= 4
        }
        buffer.writeStaticString("\r\n")
        return buffer
    }

    /// The last chunk, which ends the body.
    static var last: ByteBuffer { ByteBuffer(staticString: "0\r\n\r\n") }
}
