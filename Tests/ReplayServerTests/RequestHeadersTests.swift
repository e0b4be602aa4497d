import HTTPTypes
import Hummingbird
import Testing

@testable import ReplayServer

@Suite("Request headers")
struct RequestHeadersTests {
    /// `value(_:)` answers as HTTPFields' subscript does (fields of one name joined, in
    /// order), case-insensitively, so the headers a request repeats are judged as before.
    @Test func aFieldsValueIsTheSubscriptsWithoutJoiningOneValue() throws {
        var fields = HTTPFields()
        fields.append(HTTPField(name: try #require(HTTPField.Name("producer-id")), value: "billing"))
        fields.append(HTTPField(name: .streamClosed, value: "true"))
        fields.append(HTTPField(name: .contentType, value: "text/plain"))
        fields.append(HTTPField(name: .streamClosed, value: "false"))
        #expect(fields.value(.producerID) == "billing")
        #expect(fields.value(.streamClosed) == "true, false")
        #expect(fields.value(.streamClosed) == fields[.streamClosed])
        #expect(fields.value(.contentType) == "text/plain")
        #expect(fields.value(.producerSeq) == nil)
        #expect(!RequestHeaders(fields: fields).closes, "a repeated Stream-Closed is not `true`")
        #expect(throws: HTTPProblem.self) { try RequestHeaders(fields: fields).producer() }
    }

    /// Media types compare as the protocol says: case aside, parameters and the spaces
    /// around them aside; built or compared in place, the same answer.
    @Test func mediaTypesCompareWithoutTheirParameters() {
        #expect(RequestHeaders.mediaType(" Application/JSON ; charset=utf-8") == "application/json")
        #expect(RequestHeaders.sameMediaType(" Application/JSON ; charset=utf-8", "application/json"))
        #expect(RequestHeaders.sameMediaType("application/vnd.api+json", "APPLICATION/VND.API+JSON;x=1"))
        #expect(!RequestHeaders.sameMediaType("application/json", "application/jsonx"))
        #expect(!RequestHeaders.sameMediaType("text/plain", "text/html"))
        #expect(!RequestHeaders.sameMediaType("text/plain", ""))
        #expect(RequestHeaders.sameMediaType(";a=b", " "), "two empty media types")
    }

    /// An offset is two 16-digit numbers; a sequence number too long for 16 digits keeps
    /// all of its own.
    @Test func offsetsAreTwoPaddedNumbers() {
        #expect(StreamOffset.text(after: 0) == "0000000000000000_0000000000000000")
        #expect(StreamOffset.text(after: 42) == "0000000000000042_0000000000000000")
        #expect(StreamOffset.text(after: 9_999_999_999_999_999) == "9999999999999999_0000000000000000")
        #expect(StreamOffset.text(after: 10_000_000_000_000_000) == "10000000000000000_0000000000000000")
        #expect(StreamOffset.parse("0000000000000042_0000000000000000") == .after(42))
    }
}
