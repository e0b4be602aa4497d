import HTTPTypes
import NIOCore

/// An HTTP/1.1 answer written as bytes into one buffer, for the answers the door writes to
/// the socket itself (`FramedAppendHandler`): the status line, the fields, a blank line,
/// then the body.
///
/// Why by hand: NIO's encoder takes NIO's own head, to which swift-http-types' is converted
/// field by field (the head's storage, its list of fields, a buffer), each part boxed on its
/// way through the pipeline; an append's answer is a handful of fields. What that encoder
/// does beyond writing is done here too: a status that has no body (1xx, 204, 304) is
/// written without `Content-Length` or `Transfer-Encoding`, as NIO frames it.
enum HTTP1AnswerBytes {
    /// An answer whose fields are already a list (a refusal's).
    static func write(_ status: HTTPResponse.Status, _ fields: HTTPFields, body: ByteBuffer?, into buffer: inout ByteBuffer) {
        var answer = Fields(status, in: consume buffer)
        for field in fields { answer.set(field.name, field.value) }
        buffer = answer.end(body: body)
    }

    /// An answer's status line, then its fields as they are set, each written at once: an
    /// answer that builds no list of them (`InlineAppends`' written POST). It holds the
    /// buffer, moved in and not shared (or each write would copy it), until `end`.
    struct Fields: AnswerFields {
        private var buffer: ByteBuffer
        private let hasBody: Bool

        init(_ status: HTTPResponse.Status, in buffer: consuming ByteBuffer) {
            buffer.writeStaticString("HTTP/1.1 ")
            buffer.writeString(String(status.code))
            buffer.writeStaticString(" ")
            buffer.writeString(status.reasonPhrase)
            buffer.writeStaticString("\r\n")
            hasBody = !(100..<200).contains(status.code) && status.code != 204 && status.code != 304
            self.buffer = buffer
        }

        mutating func set(_ name: HTTPField.Name, _ value: String) {
            if !hasBody, name == .contentLength || name == .transferEncoding { return }
            buffer.writeString(name.rawName)
            buffer.writeStaticString(": ")
            // As `HTTPField` keeps a value: a byte a field cannot carry becomes a space.
            buffer.writeString(HTTPField.isValidValue(value) ? value : HTTPField(name: name, value: value).value)
            buffer.writeStaticString("\r\n")
        }

        /// The offset's digits written in place: its text is 33 bytes, over what a string
        /// keeps inline, so it was an allocation for every POST.
        mutating func setOffset(_ name: HTTPField.Name, after sequence: UInt64) {
            guard StreamOffset.hasLength(after: sequence) else { return set(name, StreamOffset.text(after: sequence)) }
            buffer.writeString(name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: StreamOffset.length) {
                StreamOffset.write(after: sequence, into: $0)
            }
            buffer.writeStaticString("\r\n")
        }

        /// Ends the fields, writes `body` if the status has one, and gives the buffer back,
        /// after which nothing is written here.
        ///
        /// Mutating, not consuming: a consuming call may be handed a copy of the answer, and
        /// the blank line's write then finds the buffer shared and copies it (two allocations
        /// a POST, which the release build's allocation budget catches).
        mutating func end(body: ByteBuffer? = nil) -> ByteBuffer {
            buffer.writeStaticString("\r\n")
            if hasBody, let body { buffer.writeImmutableBuffer(body) }
            return buffer
        }
    }
}
