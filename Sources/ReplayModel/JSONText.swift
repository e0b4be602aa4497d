import Foundation

/// A value as the compact JSON text the `derivations` row and the wire keep: keys sorted, so
/// the same value is always the same text (a definition compares equal to the stored one,
/// and `sqlite3` shows it the same each time), and slashes as they are (stream names).
public enum JSONText {
    public static func of(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
