import Foundation

/// The code lines (not `//` comments) of the repository's Swift files under `folders` that
/// match the regular expression `pattern`, each as `path:line: text`: for tests that keep a
/// construct out of the code.
public func swiftLines(matching pattern: String, under folders: [String]) throws -> [String] {
    var found: [String] = []
    for folder in folders {
        let files = try FileManager.default.subpathsOfDirectory(atPath: repositoryRoot + "/" + folder).filter { $0.hasSuffix(".swift") }
        for file in files.sorted() {
            let path = folder + "/" + file
            let lines = try String(contentsOfFile: repositoryRoot + "/" + path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (number, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                if line.range(of: pattern, options: .regularExpression) != nil { found.append("\(path):\(number + 1): \(line)") }
            }
        }
    }
    return found
}
