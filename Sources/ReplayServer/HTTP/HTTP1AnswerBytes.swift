import HTTPTypes
import NIOCore

/// An HTTP/1.1 answer written as bytes into one buffer, for the answers the door writes to
/// the socket itself (`FramedAppendHandler`): the status line, the fields as given, a
/// blank line, then the body.
///
/// Why by hand: NIO's encoder takes NIO's own head, to which swift-http-types' is converted
/// field by field (the head's storage, its list of fields, a buffer), each part boxed on its
/// way through the pipeline; an append's answer is a handful of fields. What that encoder
/// does beyond writing is done here too: a status that has no body (1xx, 204, 304) is
/// written without `Content-Length` or `Transfer-Encoding`, as NIO frames it.
enum HTTP1AnswerBytes {
    static func write(_ status: HTTPResponse.Status, _ fields: HTTPFields, body: ByteBuffer?, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("HTTP/1.1 ")
        buffer.writeString(String(status.code))
        buffer.writeStaticString(" ")
        buffer.writeString(status.reasonPhrase)
        buffer.writeStaticString("\r\n")
        let hasBody = !(100..<200).contains(status.code) && status.code != 204 && status.code != 304
        for field in fields {
            if !hasBody, field.name == .contentLength || field.name == .transferEncoding { continue }
            buffer.writeString(field.name.rawName)
            buffer.writeStaticString(": ")
            buffer.writeString(field.value)
            buffer.writeStaticString("\r\n")
        }
        buffer.writeStaticString("\r\n")
        if hasBody, let body { buffer.writeImmutableBuffer(body) }
    }
}
