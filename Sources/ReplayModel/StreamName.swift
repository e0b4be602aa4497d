/// The rule for stream names, in one place for every layer that meets a name: the store
/// that keeps it, the daemon that receives it and the clients that send it, so that a bad
/// name is refused with the same words wherever it is caught.
///
/// Names travel in text control lines and shell commands, so they are kept simple.
public enum StreamName {
    public static let maxLength = 200

    /// The rule in words, as error messages state it.
    public static let rule = "use 1 to \(maxLength) characters among letters, digits, '.', '_' and '-'"

    /// Whether `name` is a valid stream name.
    public static func isValid(_ name: String) -> Bool {
        problem(with: name) == nil
    }

    /// What is wrong with `name` in a few words, or `nil` if it is a valid stream name.
    public static func problem(with name: String) -> String? {
        if name.isEmpty { return "it is empty" }
        if name.utf8.count > maxLength { return "it is \(name.utf8.count) bytes long, over \(maxLength)" }
        if let bad = name.unicodeScalars.first(where: { !isAllowed($0) }) {
            let shown = bad.properties.isWhitespace || bad.value < 0x20
                ? "U+\(String(bad.value, radix: 16, uppercase: true))" + (bad == " " ? " (a space)" : "")
                : "'\(bad)'"
            return "it contains \(shown)"
        }
        return nil
    }

    private static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "0"..."9", "A"..."Z", "a"..."z", ".", "_", "-": true
        default: false
        }
    }
}
