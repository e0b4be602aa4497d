import HTTPTypes
import NIOCore
import Testing

@testable import ReplayServer

/// An answer the door writes as bytes itself (`HTTP1AnswerBytes`): its fields written as they
/// are set are the bytes of the same fields made into a list first, as legal as the list
/// keeps them. (That its buffer is not copied on the way, two allocations a POST, is held
/// by the release build's budget in tools/allocation-budgets.tsv: a debug build copies.)
@Suite("HTTP1AnswerBytes")
struct HTTP1AnswerBytesTests {
    static let settings = {
        var settings = HTTPSettings(host: "127.0.0.1", port: 0)
        settings.allowedOrigins = ["https://a.example"]
        return settings
    }()

    /// The fields of a written POST, from the functions both kinds of answer share.
    static func addFields(to fields: inout some AnswerFields) {
        fields.setOffset(.streamNextOffset, after: 7)
        fields.set(.producerEpoch, "0")
        fields.set(.contentLength, "0")
        FrontDoorResponder.addHeaders(to: &fields, origin: "https://a.example", settings: settings)
        fields.set(.date, "Wed, 02 Dec 2026 16:14:47 GMT")
    }

    static func text(_ buffer: ByteBuffer) -> String {
        String(buffer: buffer)
    }

    @Test(arguments: [HTTPResponse.Status.noContent, .ok])
    func fieldsWrittenAsTheyAreSetAreTheListsBytes(status: HTTPResponse.Status) {
        var list = HTTPFields()
        Self.addFields(to: &list)
        var fromList = ByteBuffer()
        HTTP1AnswerBytes.write(status, list, body: nil, into: &fromList)

        var direct = HTTP1AnswerBytes.Fields(status, in: ByteBuffer())
        Self.addFields(to: &direct)
        let written = direct.end()

        #expect(Self.text(written) == Self.text(fromList))
        let text = Self.text(written)
        #expect(text.hasPrefix("HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nStream-Next-Offset: 0000000000000007_0000000000000000\r\n"))
        #expect(text.contains("Access-Control-Allow-Origin: https://a.example\r\n"))
        #expect(text.contains("Vary: Origin\r\n"))
        #expect(text.hasSuffix("GMT\r\n\r\n"))
        #expect(text.contains("Content-Length: 0\r\n") == (status == .ok), "a 204 has no Content-Length, as NIO's encoder writes it")
    }

    /// A value with a line break in it cannot end the field and start another: its bytes a
    /// field cannot carry are spaces, as `HTTPField` makes them.
    @Test func aValueIsWrittenAsLegalAsTheListKeepsIt() {
        let value = "closed\r\nSet-Cookie: x=1"
        var direct = HTTP1AnswerBytes.Fields(.noContent, in: ByteBuffer())
        direct.set(.replayFailure, value)
        let text = Self.text(direct.end())
        #expect(text == "HTTP/1.1 204 No Content\r\nReplay-Stream-Failed: \(HTTPField(name: .replayFailure, value: value).value)\r\n\r\n")
        #expect(!text.contains("\r\nSet-Cookie"))
    }

    /// The offset written in place is its text, whatever its number (one of 17 digits and
    /// more, which no stream reaches, is written as its text).
    @Test(
        arguments: [
            (0, "0000000000000000_0000000000000000"),
            (7, "0000000000000007_0000000000000000"),
            (9_999_999_999_999_999, "9999999999999999_0000000000000000"),
            (10_000_000_000_000_000, "10000000000000000_0000000000000000"),
            (UInt64.max, "18446744073709551615_0000000000000000"),
        ] as [(UInt64, String)])
    func anOffsetWrittenInPlaceIsItsText(sequence: UInt64, offset: String) {
        var direct = HTTP1AnswerBytes.Fields(.noContent, in: ByteBuffer())
        direct.setOffset(.streamNextOffset, after: sequence)
        #expect(Self.text(direct.end()) == "HTTP/1.1 204 No Content\r\nStream-Next-Offset: \(offset)\r\n\r\n")
        #expect(StreamOffset.text(after: sequence) == offset)
    }
}
