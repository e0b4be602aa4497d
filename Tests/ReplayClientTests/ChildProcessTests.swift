import Foundation
import ReplayTesting
import Testing

/// The daemon and the test processes start children with swift-subprocess, never with
/// Foundation's `Process`. The toolchain's Foundation (6.3.x) reads 256 bytes past each
/// `/proc/self/fd` entry while `Process.run()` lists the descriptors to close; with the
/// many descriptors of a full parallel test run open, that read once crossed into an
/// unmapped page and the whole test process died of SIGSEGV inside `Process.run()`
/// (swift-corelibs-foundation #5472, fixed only on its main branch). A crash that takes
/// every test down with it blocks any landing, so no code of ours may bring it back.
@Suite("child processes")
struct ChildProcessTests {
    @Test func nothingStartsAChildWithFoundationsProcess() throws {
        let root = repositoryRoot
        let files = try FileManager.default.subpathsOfDirectory(atPath: root)
            .filter { ($0.hasPrefix("Sources/") || $0.hasPrefix("Tests/")) && $0.hasSuffix(".swift") }
        let pattern = #"\bProcess\s*\(\s*\)|\bProcess\.run\(|:\s*Process\b|\bPipe\s*\(\s*\)"#
        var found: [String] = []
        for file in files {
            let lines = try String(contentsOfFile: root + "/" + file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (number, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                if line.range(of: pattern, options: .regularExpression) != nil { found.append("\(file):\(number + 1): \(line)") }
            }
        }
        #expect(found.isEmpty, "use swift-subprocess (runProgram, TestDaemon) instead:\n\(found.joined(separator: "\n"))")
    }
}
