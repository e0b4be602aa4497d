import Foundation
import ReplayTesting
import Testing

/// The live view in a real browser: tools/live_view_check.py opens `GET /` in headless
/// Chromium (Debian's `chromium`, which CI installs) against the real daemon and reads the
/// page's DOM, polling until it shows what is expected (no timing is asserted): the tail
/// with sequence numbers and times, paused, filtered and restarted from a sequence number;
/// JSON pretty-printed; rates as sparklines; a group's and a durable consumer's lag; a
/// failed source's exit status and last stderr line; a subscription; the list and the tail
/// live again after a daemon restart, every event once; and a page of 50 of 1,000 streams.
@Suite("Live view in Chromium", .timeLimit(.minutes(3)))
struct LiveViewTests {
    @Test func thePageShowsTheDaemonLiveAndResumesAfterARestart() async throws {
        try await Prerequisite.chromium.require()
        let script = toolScript("live_view_check.py")
        let result = try await runProgram("/usr/bin/env", ["python3", script, "--replayd", try builtExecutable("replayd")])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        let summary = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
        #expect(summary["tail"] as? [String] == ["e1", "e2", "e3", "e4", "e5"], "\(result.stdout)")
        #expect((summary["listed"] as? String)?.hasPrefix("view/demo") == true, "the stream list shows the stream")
        #expect((summary["time"] as? String)?.count == 12, "each event shows its time, HH:MM:SS.mmm: \(summary["time"] ?? "none")")
        #expect(summary["filtered"] as? [String] == ["e2"], "the filter shows only what matches")
        #expect(summary["pretty"] as? String == "{\n  \"order\": 7,\n  \"items\": [\n    \"a\",\n    \"b\"\n  ]\n}")
        #expect(summary["group"] as? String == "workers: 1 members, 2 pending, lag 2", "the group beside its stream")
        #expect((summary["consumer"] as? String)?.hasPrefix("audit") == true, "the durable consumer and its lag")
        #expect((summary["scheduled"] as? String)?.hasPrefix("1 scheduled, next 20") == true, "a scheduled event beside the retained ones")
        #expect((summary["compacted"] as? String)?.hasPrefix("compacted at ") == true, "a compacted stream's last pass: \(summary["compacted"] ?? "none")")
        let source = summary["source"] as? String ?? ""
        #expect(source.contains("failed") && source.contains("status 3") && source.contains("boom"), "\(source)")
        #expect(summary["subscription"] as? String == "billing|pull-wake|view/*|1|-|active|1", "the subscription, its wake and its lag")
        #expect(summary["page"] as? String == "1–50 of 1006 streams")
        #expect(summary["rows"] as? Int == 50)
        #expect(summary["found"] as? String == "many/0777")
    }
}
