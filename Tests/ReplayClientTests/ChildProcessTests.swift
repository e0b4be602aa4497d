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
        let pattern = #"\bProcess\s*\(\s*\)|\bProcess\.run\(|:\s*Process\b|\bPipe\s*\(\s*\)"#
        let found = try swiftLines(matching: pattern, under: ["Sources", "Tests"])
        #expect(found.isEmpty, "use swift-subprocess (runProgram, TestDaemon) instead:\n\(found.joined(separator: "\n"))")
    }

    /// A signal for a child that has exited reaches no other process, even the one that now
    /// has its pid: the test support signals through process descriptors. The pid is made
    /// to come round again by setting the kernel's last pid (`ns_last_pid`, root only);
    /// other processes of the machine may take it first, so the pair is tried until the
    /// second child gets the first one's pid. Signalled by pid, the second would die of
    /// SIGKILL instead of ending on the SIGTERM its stop sends.
    @Test func aSignalForAnExitedChildMissesTheProcessThatTookItsPid() async throws {
        let lastPid = "/proc/sys/kernel/ns_last_pid"
        try #require(access(lastPid, W_OK) == 0, "the tests run as root, as CI runs them")
        try await withTemporaryDirectory { directory in
            for _ in 0..<500 {
                let first = try await BackgroundProcess("/bin/true", [], outputPath: directory + "/first")
                #expect(await first.waitForExit() == 0)
                let fd = open(lastPid, O_WRONLY)
                try #require(fd >= 0)
                let written = Array("\(first.pid - 1)".utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                close(fd)
                try #require(written > 0)
                let second = try await BackgroundProcess("/bin/sleep", ["60"], outputPath: directory + "/second")
                guard second.pid == first.pid else {
                    await second.stop(SIGKILL)
                    continue
                }
                first.signal(SIGKILL)
                #expect(await second.stop(SIGTERM) == SIGTERM, "the SIGKILL for the exited first child reached pid \(second.pid)'s new owner")
                return
            }
            Issue.record("no child got an exited child's pid in 500 tries")
        }
    }
}
