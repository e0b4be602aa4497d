/// Text as a Structured Field item (RFC 9651) in a header replay writes: a String where
/// the text is printable ASCII, else a Display String, whose UTF-8 bytes beyond it are
/// percent-encoded. Written by hand: only this one item kind is written, and swift-http-
/// structured-headers is not among the packages this project depends on.
enum StructuredFieldText {
    static func string(_ text: String) -> String {
        let bytes = Array(text.utf8)
        if bytes.allSatisfy({ (0x20...0x7E).contains($0) }) {
            var quoted = "\""
            for character in text {
                if character == "\"" || character == "\\" { quoted.append("\\") }
                quoted.append(character)
            }
            return quoted + "\""
        }
        var display = "%\""
        for byte in bytes {
            // RFC 9651 §4.1.11: `%`, `"` and every byte outside printable ASCII are
            // percent-encoded, in lowercase hex.
            if (0x20...0x7E).contains(byte) && byte != UInt8(ascii: "%") && byte != UInt8(ascii: "\"") {
                display.append(Character(Unicode.Scalar(byte)))
            } else {
                display += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return display + "\""
    }
}
