import HTTPTypes
import Testing

@testable import ReplayServer

/// What `FramedRequestHead` reads from a connection's bytes, and what it leaves, from the
/// request's first byte, to NIO's decoder: only a POST framed by nothing but its one
/// `Content-Length` is read.
@Suite("FramedRequestHead")
struct FramedRequestHeadTests {
    static func scan(_ text: String, maxLength: Int = 8_192) -> FramedRequestHead.Scan {
        Array(text.utf8).withUnsafeBytes { FramedRequestHead.scan($0, maxLength: maxLength) }
    }

    static func head(_ text: String) -> FramedRequestHead? {
        if case .head(let head) = scan(text) { head } else { nil }
    }

    static func isUnsupported(_ text: String) -> Bool {
        if case .unsupported = scan(text) { true } else { false }
    }

    static func isIncomplete(_ text: String) -> Bool {
        if case .incomplete = scan(text) { true } else { false }
    }

    @Test func aPlainPostIsReadWithItsFieldsInOrderAndHostAsItsAuthority() throws {
        let text = "POST /v1/stream/a?x=1 HTTP/1.1\r\nHost: example:80\r\nContent-Type:  text/plain \r\nContent-Length: 3\r\nProducer-Id: p\r\n\r\nabc"
        let head = try #require(Self.head(text))
        #expect(head.target == "/v1/stream/a?x=1")
        #expect(head.authority == "example:80")
        #expect(head.contentLength == 3)
        #expect(head.length == text.utf8.count - 3, "the body starts after the blank line")
        #expect(head.fields.map(\.name.rawName) == ["Content-Type", "Content-Length", "Producer-Id"])
        #expect(head.fields[.contentType] == "text/plain", "the value without the spaces around it")
    }

    @Test func aHeadNotAllArrivedIsIncompleteUntilItsLimit() {
        let text = "POST /v1/stream/a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
        #expect(Self.isIncomplete(text))
        #expect(Self.isIncomplete("PO"), "what has arrived could still be a POST")
        #expect(Self.isUnsupported(String(text.prefix(30))) == false)
        if case .unsupported = Self.scan(text, maxLength: 40) {} else { Issue.record("a head longer than the limit is NIO's") }
    }

    /// Each of these is framed some other way, or could be read differently by another
    /// reader: NIO's decoder reads it.
    @Test(arguments: [
        "GET /v1/stream/a HTTP/1.1\r\nHost: x\r\n\r\n",
        "PUT /v1/stream/a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        "post /v1/stream/a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n",
        "POST /v1/stream/a HTTP/1.0\r\nHost: x\r\nContent-Length: 1\r\n\r\n",
        "POST http://x/v1/stream/a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nContent-Length: 1,1\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nContent-Length : 1\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Length: 1\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\nContent-Length: 1\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nContent-Length: 1\r\nX-A: b\rc\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nContent-Length: 1\r\nX-A: b\r\n folded\r\n\r\n",
        "POST /v1/stream/a HTTP/1.1\r\nContent-Length: 1\r\nX-A: caf\u{e9}\r\n\r\n",
        "POST /v1/stream/a b HTTP/1.1\r\nContent-Length: 1\r\n\r\n",
        "POST /v1/stream/a  HTTP/1.1\r\nContent-Length: 1\r\n\r\n",
    ])
    func whatIsFramedOtherwiseIsLeftToNIO(_ text: String) {
        #expect(Self.isUnsupported(text))
    }

    @Test func aHeadWithMoreFieldsThanItsLimitIsLeftToNIO() {
        let fields = (0...FramedRequestHead.maxFields).map { "X-\($0): v\r\n" }.joined()
        #expect(Self.isUnsupported("POST /v1/stream/a HTTP/1.1\r\nContent-Length: 1\r\n\(fields)\r\n"))
    }

    /// A head arriving in reads is searched on from where the last search stopped, and its
    /// blank line is found when it straddles the two.
    @Test func aSearchGoesOnFromWhereTheLastStopped() throws {
        let text = Array("POST /v1/stream/a HTTP/1.1\r\nContent-Length: 1\r\n\r\nx".utf8)
        for cut in (text.count - 6)..<(text.count - 1) {
            let first = text[..<cut].withUnsafeBytes { FramedRequestHead.scan($0, maxLength: 8_192) }
            guard case .incomplete = first else {
                Issue.record("incomplete at \(cut)")
                continue
            }
            let whole = text.withUnsafeBytes { FramedRequestHead.scan($0, maxLength: 8_192, searched: cut) }
            guard case .head(let head) = whole else {
                Issue.record("the head is found on from \(cut)")
                continue
            }
            #expect(head.length == text.count - 1)
        }
    }

    /// A usual name is found in any case (with the table's spelling); any other is read as
    /// sent, one of a usual name's length included.
    @Test func namesAreReadInAnyCase() throws {
        let text = "POST /v1/stream/a HTTP/1.1\r\ncontent-TYPE: text/plain\r\nCONTENT-LENGTH: 1\r\nContent-Tipe: y\r\nX-Custom: z\r\n\r\nx"
        let head = try #require(Self.head(text))
        #expect(head.contentLength == 1)
        #expect(head.fields[.contentType] == "text/plain")
        #expect(head.fields.map(\.name.rawName) == ["Content-Type", "Content-Length", "Content-Tipe", "X-Custom"])
        #expect(head.fields[HTTPField.Name("x-custom")!] == "z")
    }
}
