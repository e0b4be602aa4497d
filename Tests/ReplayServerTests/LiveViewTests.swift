import Foundation
import ReplayTesting
import Testing

/// The live view in a real browser: tools/live_view_check.py opens `GET /` in headless
/// Chromium (Debian's `chromium`, which CI installs), publishes over the socket while the
/// page tails the stream over SSE, restarts the daemon on the same port, and reads the
/// page's DOM: every event shown live, once, in order, across the restart.
@Suite("Live view in Chromium", .timeLimit(.minutes(3)))
struct LiveViewTests {
    @Test func thePageTailsLiveAndResumesAfterARestartWithoutDuplicates() async throws {
        try await Prerequisite.chromium.require()
        let script = toolScript("live_view_check.py")
        let result = try await runProgram("/usr/bin/env", ["python3", script, "--replayd", try builtExecutable("replayd")])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains(#""tail": ["e1", "e2", "e3", "e4"]"#), "\(result.stdout)")
        #expect(result.stdout.contains(#""listed": "view/demo3"#), "the stream list counts 3 events before the restart")
        #expect(result.stdout.contains(#""group": "workers: 1 members, 2 pending, lag 1""#), "the group beside its stream")
        #expect(result.stdout.contains(#""subscription": "billing|pull-wake|view/*|1|-|active|1""#), "the subscription, its wake and its lag")
    }
}
