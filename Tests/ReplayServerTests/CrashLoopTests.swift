import Foundation
import ReplayTesting
import Testing

/// A short run of tools/crash_loop.py: mixed load (pipelined publishers, resuming live
/// subscribers, a catch-up reader, an eager source, a consumer group's workers) against the
/// real daemon, killed with SIGKILL three times. Nothing acknowledged may be lost, nothing
/// may be seen twice, no group event acknowledged before a kill is handed out after it, and
/// every stream's hash chain holds after every kill.
@Suite("Crash loop", .timeLimit(.minutes(3)))
struct CrashLoopTests {
    @Test func threeSIGKILLsUnderMixedLoadLoseNothing() async throws {
        let script = toolScript("crash_loop.py")
        let result = try await runProgram(
            "/usr/bin/env",
            ["python3", script, "--replayd", try builtExecutable("replayd"), "--kills", "3", "--seconds", "1", "--seed", "7"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("kills survived: 3"))
        #expect(result.stdout.contains("events lost: 0"))
        #expect(!result.stdout.contains("violation"))
        // Every stream's hash chain was recomputed from the file after each kill, and held.
        let chained = result.stdout.split(separator: "\n").first { $0.hasPrefix("hash chains verified after the kills: ") }
        #expect(chained.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0 >= 3 * 4, "\(result.stdout)")
        // The group's workers acknowledged through the kills and finished after the last one.
        #expect(result.stdout.contains("group: "), "\(result.stdout)")
        // A reader cut mid-frame by a kill ends its round and is counted, never a traceback.
        #expect(result.stdout.contains("connections cut mid-frame: "))
        #expect(!result.stderr.contains("Traceback"), "\(result.stderr)")
    }
}
