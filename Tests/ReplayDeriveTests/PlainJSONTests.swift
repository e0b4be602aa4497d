import CJQ
import CJQPlainJSON
import Foundation
import ReplayTesting
import Testing

/// `replay_plain_json_parse` gives jq's own value for every plain document, and leaves
/// every other one to jq's parser, whose value or error is then the document's;
/// `replay_plain_json_print` prints every plain value as jq does, and leaves every other one
/// to jq's printer.
@Suite("Plain JSON parsed to jq's values, and printed")
struct PlainJSONTests {
    /// What each parser makes of `document`: its value as jq prints it, or `nil`; for jq's
    /// parser an invalid document's message instead.
    private static func parsed(_ document: String) -> (plain: String?, jq: String) {
        // With a terminator past its length, so that even an empty document has an address.
        let bytes = document.utf8CString
        let length = Int32(bytes.count - 1)
        return bytes.withUnsafeBufferPointer { buffer in
            let plain = replay_plain_json_parse(buffer.baseAddress!, length)
            let theirs = jv_parse_sized(buffer.baseAddress!, length)
            return (jv_is_valid(plain) != 0 ? dump(plain) : nil, jv_is_valid(theirs) != 0 ? dump(theirs) : "error: " + message(theirs))
        }
    }

    private static func dump(_ value: jv) -> String {
        let text = jv_dump_string(value, 0)
        defer { jv_free(text) }
        return String(cString: jv_string_value(text))
    }

    private static func message(_ invalid: jv) -> String {
        let message = jv_invalid_get_msg(invalid)
        defer { jv_free(message) }
        return jv_get_kind(message) == JV_KIND_STRING ? String(cString: jv_string_value(message)) : "(none)"
    }

    @Test(arguments: [
        #"{"t":1764570000000,"v":123456}"#, #"{"k":"k917","v":-42,"ok":true,"none":null,"no":false}"#, "0", "-0", "17", "-3.25",
        "1234567890123456789", "0.1", "123456789012345.678", #""plain text""#, #""""#, "[]", "{}", " [ 1 , [2,[3]] , {\"a\" : {}} ] ",
        #"{"a":1,"a":2,"b":3}"#, #"{"id":12,"amount":99.5,"items":[{"sku":"a1","qty":2},{"sku":"b2","qty":1}]}"#,
        "\t\r\n{\"x\":\n[true,false,null]}\n",
    ])
    func aPlainDocumentIsJqsOwnValue(_ document: String) {
        let (plain, jq) = Self.parsed(document)
        #expect(plain != nil, "plain: parsed here, not by jq")
        #expect(plain == jq)
    }

    @Test(arguments: [
        #""tab\there""#, #""caf\u00e9""#, "\"café\"", "\"tab\there\"", "1e3", "2.5E-3", "01", "1.", ".5", "+1", "-", "nan", "NaN",
        "Infinity", "[1,]", #"{"a" 1}"#, #"{"a":1"#, "[1 2]", "1 2", "", "   ", "tru", "nulls", #"{"a":1,}"#, "{1:2}", "[\"a\"\u{0}]",
        String(repeating: "[", count: 65) + String(repeating: "]", count: 65),
    ])
    func anyOtherDocumentIsLeftToJqsParser(_ document: String) {
        #expect(Self.parsed(document).plain == nil)
    }

    /// Random documents, plain and not: wherever this parser takes one, jq's gives the same
    /// value; wherever jq's refuses one, this one does too.
    @Test func randomDocumentsParseAsJqParsesThem() {
        var random = SeededGenerator(seed: 0x5EED_0F_7A)
        var taken = 0
        for round in 0..<3_000 {
            let document = Self.document(depth: 0, &random)
            let (plain, jq) = Self.parsed(document)
            if let plain {
                taken += 1
                #expect(plain == jq, "round \(round): \(document)")
            }
        }
        #expect(taken > 1_000, "most random documents are plain")
    }

    /// A document of random values, with now and then what only jq's parser takes (escapes,
    /// non-ASCII, exponents) or nobody does (a stray comma, a missing brace).
    private static func document(depth: Int, _ random: inout SeededGenerator) -> String {
        let scalars = [
            "0", "-0", "7", "-12", "3.5", "-0.001", "1e5", "2E-2", "12345678901234567", "99999999999999999999", "true", "false", "null",
            #""""#, #""k123""#, #""a b/c""#, #""\n""#, #""\u0041""#, "\"é\"", "01", "tru",
        ]
        let roll = Int.random(in: 0..<10, using: &random)
        if depth >= 4 || roll < 5 { return scalars.randomElement(using: &random)! }
        let count = Int.random(in: 0..<5, using: &random)
        let spaces = ["", " ", "\n", "\t "]
        func space() -> String { spaces.randomElement(using: &random)! }
        var parts: [String] = []
        if roll < 8 {
            for index in 0..<count {
                let key = [#""a""#, #""b""#, #""id""#, #""x y""#, #""\t""#][index % 5]
                parts.append(space() + key + space() + ":" + space() + document(depth: depth + 1, &random))
            }
            let broken = Int.random(in: 0..<40, using: &random) == 0
            return "{" + parts.joined(separator: ",") + (broken ? "," : "") + space() + "}"
        }
        for _ in 0..<count { parts.append(space() + document(depth: depth + 1, &random) + space()) }
        let unclosed = Int.random(in: 0..<40, using: &random) == 0
        return "[" + parts.joined(separator: ",") + (unclosed ? "" : "]")
    }

    /// What each printer makes of `value` (taken): replay's (`nil`: not plain), and jq's.
    private static func printed(_ value: jv) -> (plain: String?, jq: String) {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = replay_plain_json_print(value, &buffer, Int32(buffer.count))
        let plain = length < 0 ? nil : String(decoding: buffer[..<Int(length)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (plain, dump(value))
    }

    private static func value(_ document: String) -> jv {
        let parsed = jv_parse(document)
        precondition(jv_is_valid(parsed) != 0, document)
        return parsed
    }

    @Test(arguments: [
        #"{"key":"k917","state":123456789}"#, #"{"v":-42}"#, "0", "-0", "9999999999999998", "-9999999999999998", "9007199254740993", "1000",
        "1e15", "[]", "{}", #"[true,false,null,"",[{"a":[1]}]]"#, #"{"b":1,"a":2,"b":3}"#, #""a b/c~""#,
    ])
    func aPlainValueIsPrintedAsJqPrintsIt(_ document: String) {
        let (plain, jq) = Self.printed(Self.value(document))
        #expect(plain != nil, "plain: printed here, not by jq")
        #expect(plain == jq)
    }

    @Test(arguments: [
        "0.5", "-1.25", "1e16", "-1e16", "12345678901234567890", "1e300", #""é""#, #""a\"b""#, #""back\\slash""#, #""tab\t""#,
        #""\u007f""#, #"{"x":[1,2,0.1]}"#, #"{"é":1}"#,
    ])
    func anyOtherValueIsLeftToJqsPrinter(_ document: String) {
        #expect(Self.printed(Self.value(document)).plain == nil)
    }

    @Test func notANumberAndTheInfinitiesAreLeftToJqsPrinter() {
        for number in [Double.nan, .infinity, -.infinity] { #expect(Self.printed(jv_number(number)).plain == nil) }
    }

    @Test func aValueTooLongForTheBufferIsLeftToJqsPrinter() {
        let long = jv_string(String(repeating: "x", count: 5000))
        #expect(Self.printed(long).plain == nil)
    }

    /// Random numbers of every magnitude, whole and not: every integer under 10^16 is
    /// printed here, and whatever is printed here is what jq prints.
    @Test func randomNumbersPrintAsJqPrintsThem() {
        var random = SeededGenerator(seed: 0x0DD_BA11)
        for round in 0..<20_000 {
            let magnitude = Double(UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0...63, using: &random))
            let number: Double =
                switch round % 4 {
                case 0: magnitude
                case 1: -magnitude
                case 2: magnitude / Double(UInt64.random(in: 1...1000, using: &random))
                default: Double(Int64.random(in: -20_000_000_000_000_000...20_000_000_000_000_000, using: &random))
                }
            let (plain, jq) = Self.printed(jv_number(number))
            if let plain { #expect(plain == jq, "round \(round): \(number)") }
            if number == number.rounded(), abs(number) < 1e16 { #expect(plain != nil, "round \(round): \(number) is plain") }
        }
    }

    /// Random documents' values, as jq parses them: wherever replay prints one, it prints
    /// what jq does.
    @Test func randomValuesPrintAsJqPrintsThem() {
        var random = SeededGenerator(seed: 0xFACADE)
        var taken = 0
        for round in 0..<3_000 {
            let document = Self.document(depth: 0, &random)
            let parsed = jv_parse(document)
            guard jv_is_valid(parsed) != 0 else {
                jv_free(parsed)
                continue
            }
            let (plain, jq) = Self.printed(parsed)
            if let plain {
                taken += 1
                #expect(plain == jq, "round \(round): \(document)")
            }
        }
        #expect(taken > 1_000, "most random values are plain")
    }
}
