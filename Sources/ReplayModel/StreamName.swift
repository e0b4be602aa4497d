/// The rule for stream names, in one place for every layer that meets a name: the store
/// that keeps it, the daemon that receives it and the clients that send it, so that a bad
/// name is refused with the same words wherever it is caught.
///
/// Names travel in text control lines, shell commands and URL paths, so they are kept
/// simple. `/` makes hierarchies (`orders/eu/paris`), the same over the socket and over HTTP
/// (`/v1/stream/orders/eu/paris`): between slashes there is always a segment, never `.` or `..`,
/// so a name is never a path that a proxy or a client library would rewrite.
public enum StreamName {
    public static let maxLength = 200

    /// The rule in words, as error messages state it.
    public static let rule = "use 1 to \(maxLength) characters among letters, digits, '.', '_', '-' and '/' between segments (no empty, '.' or '..' segment)"

    /// Whether `name` is a valid stream name.
    public static func isValid(_ name: String) -> Bool {
        problem(with: name) == nil
    }

    /// What is wrong with `name` in a few words, or `nil` if it is a valid stream name.
    public static func problem(with name: String) -> String? {
        if name.isEmpty { return "it is empty" }
        if name.utf8.count > maxLength { return "it is \(name.utf8.count) bytes long, over \(maxLength)" }
        if let bad = name.unicodeScalars.first(where: { !isAllowed($0) }) {
            let shown =
                bad.properties.isWhitespace || bad.value < 0x20
                ? "U+\(String(bad.value, radix: 16, uppercase: true))" + (bad == " " ? " (a space)" : "")
                : "'\(bad)'"
            return "it contains \(shown)"
        }
        // A name of one segment too: `..` alone would be a path that clients rewrite.
        // Segments are measured in place, not split into an array: every POST's name
        // comes through here.
        var dots = 0
        var length = 0
        for byte in name.utf8 {
            guard byte == UInt8(ascii: "/") else {
                length += 1
                dots += byte == UInt8(ascii: ".") ? 1 : 0
                continue
            }
            if let problem = segmentProblem(length: length, dots: dots) { return problem }
            (length, dots) = (0, 0)
        }
        return segmentProblem(length: length, dots: dots)
    }

    /// Why a segment of `length` bytes, `dots` of them dots, cannot be one: empty, `.` or `..`.
    private static func segmentProblem(length: Int, dots: Int) -> String? {
        if length == 0 { return "it has an empty segment between slashes" }
        if length == dots, length <= 2 { return "it has a '\(String(repeating: ".", count: length))' segment" }
        return nil
    }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "0"..."9", "A"..."Z", "a"..."z", ".", "_", "-", "/": true
        default: false
        }
    }
}
