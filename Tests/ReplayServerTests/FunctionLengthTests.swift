import Foundation
import ReplayTesting
import Testing

/// No function in Sources is longer than a screen and a half: past that, a function does
/// several things, and the shapes the code uses instead (a table of verbs, a state machine
/// whose events return actions, one function per step) read better. It lives with the
/// daemon's tests, beside the check that docs/ARCHITECTURE.md stays true.
@Suite("Function length")
struct FunctionLengthTests {
    static let limit = 80

    @Test func noFunctionInSourcesIsLongerThanTheLimit() throws {
        let root = repositoryRoot
        let files = try FileManager.default.subpathsOfDirectory(atPath: root + "/Sources").filter { $0.hasSuffix(".swift") }
        var long: [String] = []
        for file in files {
            let lines = try String(contentsOfFile: root + "/Sources/" + file, encoding: .utf8).components(separatedBy: "\n")
            for (name, start, count) in Self.functions(in: lines) where count > Self.limit {
                long.append("Sources/\(file):\(start + 1) \(name): \(count) lines")
            }
        }
        #expect(long.isEmpty, "longer than \(Self.limit) lines:\n\(long.joined(separator: "\n"))")
    }

    @Test func theCounterFindsAFunctionsEnd() {
        let lines = [
            "struct A {", "    @inline(__always) public func f() {", "        let s = \"}\" // }", "        if true { }", "    }",
            "    init(x: Int) { self = .init(y: x) }", "}",
        ]
        #expect(Self.functions(in: lines).map(\.count) == [4, 1])
    }

    /// Each `func` or `init` with a body: its name, first line (from 0) and length in lines,
    /// by counting braces outside string literals and comments.
    static func functions(in lines: [String]) -> [(name: String, start: Int, count: Int)] {
        // Modifiers and attributes, then the keyword: not `.init(` in a call.
        let declaration = /^\s*(?:[@\w]+(?:\([\w\s,:]*\))?\s+)*(func\s+[^\s(<]+|init[?!]?\s*[(<])/
        var found: [(String, Int, Int)] = []
        for (start, line) in lines.enumerated() {
            guard !line.trimmingCharacters(in: .whitespaces).hasPrefix("//"), let match = line.firstMatch(of: declaration) else { continue }
            var depth = 0
            var opened = false
            var index = start
            scan: while index < lines.count, index < start + 20 || opened {
                for character in code(of: lines[index]) {
                    if character == "{" {
                        depth += 1
                        opened = true
                    } else if character == "}" {
                        depth -= 1
                        if opened, depth == 0 { break scan }
                    }
                }
                index += 1
            }
            if opened { found.append((String(match.output.1), start, index - start + 1)) }
        }
        return found
    }

    /// A line without its string literals and its trailing comment.
    static func code(of line: String) -> String {
        let unquoted = line.replacing(/"(\\.|[^"\\])*"/, with: "")
        return unquoted.components(separatedBy: "//").first ?? ""
    }
}
