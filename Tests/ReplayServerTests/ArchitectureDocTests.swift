import Foundation
import ReplayTesting
import Testing

/// docs/ARCHITECTURE.md stays true to the code: every type, file or script it names in
/// backticks exists, and so does every member it names as `Type.member`. (A newcomer traces a PUB, a SUB and a shutdown through it.) It lives
/// with the daemon's tests: the document describes the daemon's modules first of all.
@Suite("docs/ARCHITECTURE.md")
struct ArchitectureDocTests {
    static let root = repositoryRoot

    @Test func everyNamedTypeAndFileExists() throws {
        let doc = try String(contentsOfFile: Self.root + "/docs/ARCHITECTURE.md", encoding: .utf8)
        let files = try FileManager.default.subpathsOfDirectory(atPath: Self.root).filter { !$0.hasPrefix(".") && !$0.contains("/.build") }
        let sources = try files.filter { ($0.hasPrefix("Sources/") || $0.hasPrefix("Plugins/")) && $0.hasSuffix(".swift") }
            .map { try String(contentsOfFile: Self.root + "/" + $0, encoding: .utf8) }
            .joined(separator: "\n")
        let modules = Set(files.filter { $0.hasPrefix("Sources/") && $0.split(separator: "/").count == 2 }.map { String($0.dropFirst(8)) })

        // Inline code spans outside fenced blocks.
        let prose = doc.components(separatedBy: "```").enumerated().filter { $0.offset % 2 == 0 }.map(\.element).joined()
        let spans = prose.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        var missing: [String] = []
        for span in spans {
            for word in span.split(whereSeparator: { !($0.isLetter || $0.isNumber || "_+./-".contains($0)) }).map(String.init) {
                if [".swift", ".sh", ".sql"].contains(where: word.hasSuffix) {
                    if !files.contains(where: { $0.hasSuffix(word) }) { missing.append(word) }
                } else if let member = Self.member(of: word) {
                    // Declared somewhere as a function, property, case or initializer's label.
                    let declared = "\\b(func|var|let|case)\\s+(`?\\w+`?\\s*,\\s*)*\(member)\\b|\\b\(member)\\s*[:(<]"
                    if sources.range(of: declared, options: .regularExpression) == nil { missing.append(word) }
                } else if word.first?.isUppercase == true, word.contains(where: \.isLowercase),
                    word.dropFirst().contains(where: \.isUppercase), word.allSatisfy({ $0.isLetter || $0.isNumber })
                {
                    if !modules.contains(word), sources.range(of: "\\b\(word)\\b", options: .regularExpression) == nil {
                        missing.append(word)
                    }
                }
            }
        }
        #expect(missing.isEmpty, "named in docs/ARCHITECTURE.md but not in the code: \(missing)")
    }

    /// The member of `Type.member` (a type's name, then a lowercase identifier), if the word
    /// is one.
    static func member(of word: String) -> String? {
        let parts = word.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].first?.isUppercase == true, parts[0].allSatisfy({ $0.isLetter || $0.isNumber }),
            parts[1].first?.isLowercase == true, parts[1].allSatisfy({ $0.isLetter || $0.isNumber })
        else { return nil }
        return String(parts[1])
    }
}
