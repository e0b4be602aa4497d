import Foundation
import ReplayTesting
import Testing

/// A client nobody here wrote: the `durable-streams` package from PyPI (which CI installs)
/// appends to and reads from replayd's HTTP front door, JSON and text, catch-up, SSE and
/// long-poll, beside the socket protocol on the same stream (tools/durable_streams_client_check.py).
@Suite("The PyPI durable-streams client", .timeLimit(.minutes(5)))
struct DurableStreamsClientTests {
    @Test func appendsAndReadsThroughThePythonClient() async throws {
        try await Prerequisite.durableStreamsClient.require()
        let script = toolScript("durable_streams_client_check.py")
        let result = try await runProgram("/usr/bin/env", ["python3", script, "--replayd", try builtExecutable("replayd")])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains(#""json": [{"order": 1}, {"order": 2}, [3, "three"]]"#), "\(result.stdout)")
        #expect(result.stdout.contains(#""text": "hello world!""#))
        #expect(result.stdout.contains(#""socket_then_http": true"#))
    }
}
