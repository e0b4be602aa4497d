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
        #expect(throws: HTTPError.self) { try RequestHeaders(fields: fields).producer() }
    }
}
