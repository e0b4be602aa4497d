import Foundation
import ReplayProtocol
import ReplayTesting
import Testing

/// The replayctl binary, as a shell uses it.
@Suite("replayctl", .timeLimit(.minutes(3)))
struct ReplayctlTests {
    var replayctl: String { get throws { try builtExecutable("replayctl") } }

    @Test(arguments: [
        "send", "subscribe", "create", "info", "list", "delete", "complete", "fail", "reset", "groups", "pending", "ack", "nack", "work", "ping", "top",
        "backup",
    ])
    func everySubcommandHasHelp(subcommand: String) async throws {
        let result = try await runProgram(try replayctl, [subcommand, "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE: replayctl \(subcommand)"))
        #expect(result.stdout.contains("--socket"))
    }

    @Test func rootHelpDocumentsExitCodes() async throws {
        let result = try await runProgram(try replayctl, ["--help"])
        #expect(result.status == 0)
        for line in ["0   success", "2   the subscribed stream failed", "3   replayd is not running", "64  bad arguments"] {
            #expect(result.stdout.contains(line))
        }
    }

    @Test func notRunningSaysSoWithTheSocketAndHowToStart() async throws {
        try await withTemporaryDirectory { directory in
            let socket = directory + "/nobody.sock"
            let result = try await runProgram(try replayctl, ["ping", "--socket", socket])
            #expect(result.status == 3)
            #expect(
                result.stderr
                    == "replayctl: replayd is not running on \(socket) (No such file or directory); start it with `replayd --socket \(socket)` or set REPLAY_SOCKET\n"
            )
            #expect(result.stdout.isEmpty)
        }
    }

    /// The bash, zsh and fish completions argument-parser generates, and in bash, a
    /// stream argument completed with the names the running daemon lists.
    @Test func completionsCompleteStreamNamesFromTheDaemon() async throws {
        let ctl = try replayctl
        for shell in ["bash", "zsh", "fish"] {
            let script = try await runProgram(ctl, ["--generate-completion-script", shell])
            #expect(script.status == 0 && script.stdout.contains("replayctl list --names"), "\(shell)")
        }
        try await withDaemon { daemon in
            _ = try await runProgram(ctl, ["send", "orders", "a", "--socket", daemon.socketPath])
            _ = try await runProgram(ctl, ["send", "outbox", "b", "--socket", daemon.socketPath])
            let names = try await runProgram(ctl, ["list", "--names", "--socket", daemon.socketPath])
            #expect(names.stdout == "orders\noutbox\n")
            // What bash does on `replayctl info o<TAB>`, with replayctl on the PATH.
            let folder = URL(fileURLWithPath: ctl).deletingLastPathComponent().path
            let complete =
                #"source <(replayctl --generate-completion-script bash); COMP_WORDS=(replayctl info o); COMP_CWORD=2; _replayctl; printf '%s\n' "${COMPREPLY[@]}" | sort"#
            let environment = ["PATH": folder + ":/usr/bin:/bin", "REPLAY_SOCKET": daemon.socketPath]
            let completed = try await runProgram("/bin/bash", ["-c", complete], environment: environment)
            #expect(completed.stdout == "orders\noutbox\n", "\(completed.stderr)")
        }
    }

    @Test func badArgumentsExit64() async throws {
        let result = try await runProgram(try replayctl, ["subscribe", "s", "--from", "1", "--new"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("choose one of --from, --last, --new, --since"))
    }

    @Test func sendArgumentsAndStdinThenSubscribe() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            #expect(try await runProgram(ctl, ["create", "orders", "--capacity", "unlimited", "--socket", daemon.socketPath]).status == 0)
            // --socket before the subcommand, and after it.
            let sent = try await runProgram(ctl, ["--socket", daemon.socketPath, "send", "orders", #"{"id":1}"#, #"{"id":2}"#])
            #expect(sent.status == 0)
            #expect(sent.stdout == "1\n2\n")
            let piped = try await runProgram(
                ctl, ["send", "orders", "--socket", daemon.socketPath], stdin: (3...10_002).map { "line \($0)" }.joined(separator: "\n") + "\n")
            #expect(piped.status == 0)
            #expect(piped.stdout == (3...10_002).map { "\($0)\n" }.joined())
            let quiet = try await runProgram(ctl, ["send", "-q", "orders", "x", "--socket", daemon.socketPath])
            #expect(quiet.status == 0 && quiet.stdout.isEmpty)

            let text = try await runProgram(ctl, ["subscribe", "orders", "--count", "2", "--socket", daemon.socketPath])
            #expect(text.status == 0)
            #expect(text.stdout == "{\"id\":1}\n{\"id\":2}\n")

            let json = try await runProgram(ctl, ["subscribe", "orders", "--last", "1", "--count", "1", "--json", "--socket", daemon.socketPath])
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            #expect(object?["stream"] as? String == "orders")
            #expect(object?["seq"] as? Int == 10_003)
            #expect(object?["payload"] as? String == "x")
            #expect((object?["time"] as? String)?.hasSuffix("Z") == true)
        }
    }

    /// `send --delay` schedules every line of standard input (more than one pipelined
    /// chunk), `info` counts them, `scheduled` lists the earliest, `unschedule` cancels one.
    @Test func sendDelayScheduledAndUnschedule() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            #expect(try await runProgram(ctl, ["create", "jobs"] + socket).status == 0)
            let piped = try await runProgram(ctl, ["send", "jobs", "--delay", "1h"] + socket, stdin: (1...5_000).map { "job \($0)\n" }.joined())
            #expect(piped.status == 0, "\(piped.stderr)")
            let lines = piped.stdout.split(separator: "\n")
            #expect(lines.count == 5_000 && lines.first?.hasPrefix("1 20") == true, "each one's id and due time")
            let info = try await runProgram(ctl, ["info", "jobs", "--json"] + socket)
            let described = try JSONSerialization.jsonObject(with: Data(info.stdout.utf8)) as? [String: Any]
            #expect(described?["scheduled"] as? Int == 5_000)
            #expect((described?["next_due"] as? String)?.hasSuffix("Z") == true)

            let listed = try await runProgram(ctl, ["scheduled", "jobs", "--limit", "2", "--json"] + socket)
            let events = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]
            #expect(events?.map { $0["payload"] as? String } == ["job 1", "job 2"])
            let table = try await runProgram(ctl, ["scheduled", "jobs", "--limit", "1"] + socket)
            #expect(table.stdout.hasPrefix("ID") && table.stdout.contains("job 1"), "\(table.stdout)")

            #expect(try await runProgram(ctl, ["unschedule", "jobs", "1"] + socket).status == 0)
            let again = try await runProgram(ctl, ["unschedule", "jobs", "1"] + socket)
            #expect(again.status == 1 && again.stderr.contains("no pending scheduled event 1"))
            let refused = try await runProgram(ctl, ["send", "jobs", "x", "--delay", "1h", "--atomic"] + socket)
            #expect(refused.status != 0 && refused.stderr.contains("--delay"))
            let past = try await runProgram(ctl, ["send", "jobs", "now", "--at", "2026-01-01T00:00:00Z"] + socket)
            #expect(past.status == 0)
            let appended = try await runProgram(ctl, ["subscribe", "jobs", "--count", "1"] + socket)
            #expect(appended.stdout == "now\n", "a time already past falls due at once")
        }
    }

    @Test func subscribeExitsWithTheStreamsEnd() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            _ = try await runProgram(ctl, ["send", "done", "a"] + socket)
            #expect(try await runProgram(ctl, ["complete", "done"] + socket).status == 0)
            let completed = try await runProgram(ctl, ["subscribe", "done"] + socket)
            #expect(completed.status == 0 && completed.stdout == "a\n")

            _ = try await runProgram(ctl, ["send", "broken", "b"] + socket)
            #expect(try await runProgram(ctl, ["fail", "broken", "disk on fire"] + socket).status == 0)
            let failed = try await runProgram(ctl, ["subscribe", "broken"] + socket)
            #expect(failed.status == 2)
            #expect(failed.stdout == "b\n")
            #expect(failed.stderr.contains("stream 'broken' failed: disk on fire"))

            let refused = try await runProgram(ctl, ["send", "broken", "c"] + socket)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("terminated"))
        }
    }

    @Test func gapsAreReportedOnStandardError() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            #expect(try await runProgram(ctl, ["create", "small", "--capacity", "2"] + socket).status == 0)
            _ = try await runProgram(ctl, ["send", "small", "1", "2", "3", "4"] + socket)
            let result = try await runProgram(ctl, ["subscribe", "small", "--from", "1", "--count", "2"] + socket)
            #expect(result.stdout == "3\n4\n")
            #expect(result.stderr.contains("gap: events 1...2 are no longer retained"))
        }
    }

    /// A pattern reads every matching stream, a stream's end ends only its part, and a
    /// member of a pattern's group acknowledges each event on its own stream.
    @Test func subscribeTakesAPatternAsTheProtocolDoes() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            _ = try await runProgram(ctl, ["send", "orders/eu", "e1"] + socket)
            _ = try await runProgram(ctl, ["send", "orders/us", "u1"] + socket)
            _ = try await runProgram(ctl, ["send", "other", "x"] + socket)
            #expect(try await runProgram(ctl, ["complete", "orders/us"] + socket).status == 0)
            // Each line names its stream (a stream's end ending only its part is the
            // client's, tested there).
            let read = try await runProgram(ctl, ["subscribe", "orders/*", "--json", "--count", "2"] + socket)
            #expect(read.status == 0, "\(read.stderr)")
            let lines = read.stdout.split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            #expect(Set(lines.compactMap { $0["stream"] as? String }) == ["orders/eu", "orders/us"])

            // A stream created after the SUB is read too, from its first event (and one
            // created just before it, from the start: either way, its event).
            async let later = runProgram(ctl, ["subscribe", "later/**", "--count", "1"] + socket)
            try await Task.sleep(for: .milliseconds(200))
            _ = try await runProgram(ctl, ["send", "later/asia/tokyo", "t1"] + socket)
            #expect(try await later.stdout == "t1\n")

            let member = try await runProgram(ctl, ["subscribe", "orders/*", "--group", "g", "--count", "2"] + socket)
            #expect(member.status == 0, "\(member.stderr)")
            let groups = try await runProgram(ctl, ["groups", "orders/eu", "--json"] + socket)
            #expect(groups.stdout.contains("\"pending\":0"), "\(groups.stdout)")

            for (flags, message) in [(["--durable", "d"], "a pattern takes no --durable"), (["--filter", "."], "a pattern takes no --filter")] {
                let refused = try await runProgram(ctl, ["subscribe", "orders/*"] + flags + socket)
                #expect(refused.status == 64)
                #expect(refused.stderr.contains(message), "\(refused.stderr)")
            }
            let bad = try await runProgram(ctl, ["subscribe", "ord*"] + socket)
            #expect(bad.status == 64)
            #expect(bad.stderr.contains("'ord*' is not a valid pattern"), "\(bad.stderr)")
        }
    }

    @Test func infoAndListAsTablesAndJSON() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            #expect(try await runProgram(ctl, ["create", "metrics", "--capacity", "unlimited", "--max-age", "1h", "--max-bytes", "1000"] + socket).status == 0)
            _ = try await runProgram(ctl, ["send", "metrics", "abc"] + socket)
            let table = try await runProgram(ctl, ["info", "metrics"] + socket)
            #expect(table.stdout.contains("capacity     unlimited"))
            #expect(table.stdout.contains("max age      3600.0s"))
            let json = try await runProgram(ctl, ["info", "metrics", "--json"] + socket)
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            #expect(object?["max_bytes"] as? Int == 1000)
            let list = try await runProgram(ctl, ["list", "--json"] + socket)
            let array = try JSONSerialization.jsonObject(with: Data(list.stdout.utf8)) as? [[String: Any]]
            #expect(array?.map { $0["name"] as? String } == ["metrics"])
            let rows = try await runProgram(ctl, ["list"] + socket)
            #expect(rows.stdout.hasPrefix("STREAM"))
            #expect(try await runProgram(ctl, ["delete", "metrics"] + socket).status == 0)
            #expect(try await runProgram(ctl, ["info", "metrics"] + socket).status == 1)
        }
    }

    /// Every verb that names a stream checks the name with the daemon's own rule before it
    /// connects (no daemon runs here), says what is wrong, and exits 64.
    @Test(arguments: [
        ["send", "bad name", "x"], ["subscribe", "bad name"], ["create", "bad name"], ["info", "bad name"],
        ["delete", "bad name"], ["complete", "bad name"], ["fail", "bad name", "why"], ["reset", "bad name"],
    ])
    func invalidStreamNamesAreUsageErrors(arguments: [String]) async throws {
        let result = try await runProgram(try replayctl, arguments + ["--socket", "/nonexistent/replayd.sock"])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("'bad name' is not a valid stream name (it contains U+20 (a space))"), "\(result.stderr)")
        #expect(result.stderr.contains("use 1 to 200 characters among letters, digits"))
    }

    @Test func overlongAndEmptyNamesSayWhy() async throws {
        let long = try await runProgram(try replayctl, ["info", String(repeating: "n", count: 201)])
        #expect(long.status == 64)
        #expect(long.stderr.contains("it is 201 bytes long, over 200"))
        let empty = try await runProgram(try replayctl, ["info", ""])
        #expect(empty.status == 64)
        #expect(empty.stderr.contains("it is empty"))
    }

    /// One 200-character name does not widen every row; --json and --no-trunc keep it whole.
    @Test func listCapsTheNameColumn() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            let long = String(repeating: "x", count: 200)
            _ = try await runProgram(ctl, ["send", long, "a"] + socket)
            _ = try await runProgram(ctl, ["send", "short", "b"] + socket)
            let rows = try await runProgram(ctl, ["list"] + socket)
            let lines = rows.stdout.split(separator: "\n")
            #expect(lines.count == 3)
            let widest = lines.map(\.count).max() ?? 0
            #expect(widest < 100, "\(rows.stdout)")
            #expect(lines.contains { $0.hasPrefix(String(repeating: "x", count: 39) + "…") })
            #expect(lines.contains { $0.hasPrefix("short ") })
            #expect(try await runProgram(ctl, ["list", "--json"] + socket).stdout.contains(long))
            #expect(try await runProgram(ctl, ["list", "--no-trunc"] + socket).stdout.contains(long))
        }
    }

    /// Help is prose: no run of spaces inside a sentence (a multi-line string's indentation
    /// leaking into the text). Only rows indented by two spaces (options, arguments,
    /// subcommands, exit statuses) have a column gap.
    @Test(arguments: ["", "send", "subscribe", "create", "info", "list", "delete", "complete", "fail", "reset", "ping"])
    func helpHasNoRunsOfSpacesInsideSentences(subcommand: String) async throws {
        let result = try await runProgram(try replayctl, (subcommand.isEmpty ? [] : [subcommand]) + ["--help"])
        #expect(result.status == 0)
        for line in result.stdout.split(separator: "\n") {
            var prose = line.drop { $0 == " " }
            if line.hasPrefix("  "), !line.hasPrefix("   ") {
                // A column row (an argument, option, subcommand or exit status): the prose
                // is what follows the gap after its first column.
                guard let gap = prose.firstRange(of: "  ") else { continue }
                prose = prose[gap.upperBound...].drop { $0 == " " }
            }
            #expect(!prose.contains("  "), "help of '\(subcommand)': \(line)")
        }
    }

    @Test func workRunsTheCommandPerEventAcknowledgesOnZeroAndHandsBackOtherwise() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            #expect(try await runProgram(ctl, ["send", "jobs", "a", "bad", "c"] + socket).status == 0)
            // "bad" fails every time: handed back twice, then a dead letter; one job at a time.
            let script = #"p=$(cat); test "$p" != bad && echo "$REPLAY_GROUP $REPLAY_STREAM $REPLAY_SEQ $p""#
            let work = try await runProgram(
                ctl,
                ["work", "jobs", "--group", "g", "--max-deliver", "2", "--dead-letter", "jobs.dead", "--count", "2"] + socket
                    + ["--", "/bin/sh", "-c", script])
            #expect(work.status == 0, "\(work.stderr)")
            #expect(work.stdout == "g jobs 1 a\ng jobs 3 c\n")
            #expect(work.stderr.components(separatedBy: "for event 2 of jobs ended with").count == 3)
            let dead = try await runProgram(ctl, ["subscribe", "jobs.dead", "--count", "1"] + socket)
            #expect(dead.stdout == "bad\n")
            let groups = try await runProgram(ctl, ["groups", "jobs", "--json"] + socket)
            let described = try JSONDecoder().decode([GroupDescription].self, from: Data(groups.stdout.utf8))
            #expect(described.map(\.name) == ["g"])
            #expect(described.first?.deadLettered == 1 && described.first?.pending == 0 && described.first?.redelivered == 1)
            let table = try await runProgram(ctl, ["groups", "jobs"] + socket)
            #expect(table.stdout.hasPrefix("GROUP  MEMBERS  PENDING  REDELIVERED  DEAD  OLDEST  LAG\ng "))
            #expect(try await runProgram(ctl, ["pending", "jobs", "g"] + socket).stdout == "SEQ  MEMBER  DELIVERIES  IDLE\n")
        }
    }

    @Test func aTraceContextGoesFromSendThroughSubscribeAndIntoWorkCommands() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
            let inherited = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
            #expect(try await runProgram(ctl, ["send", "jobs", "--traceparent", given, "a"] + socket).status == 0)
            // From the environment's carrier, as a traced shell script would run it.
            let environment = ["TRACEPARENT": inherited, "PATH": "/usr/bin:/bin"]
            #expect(try await runProgram(ctl, ["send", "jobs", "b"] + socket, environment: environment).status == 0)
            #expect(try await runProgram(ctl, ["send", "jobs", "c"] + socket).status == 0)
            let refused = try await runProgram(ctl, ["send", "jobs", "--traceparent", "00-nope", "d"] + socket)
            #expect(refused.status == 64 && refused.stderr.contains("W3C traceparent"), "\(refused.stderr)")

            let read = try await runProgram(ctl, ["subscribe", "jobs", "--json", "--count", "3"] + socket)
            let lines = read.stdout.split(separator: "\n").map { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            #expect(lines.map { $0?["traceparent"] as? String } == [given, inherited, nil])

            // Each command sees its event's; an untraced event's sees none, even where
            // replayctl itself runs inside a trace.
            let script = #"echo "$REPLAY_SEQ ${TRACEPARENT:-none}""#
            let work = try await runProgram(
                ctl, ["work", "jobs", "--group", "g", "--count", "3"] + socket + ["--", "/bin/sh", "-c", script], environment: environment)
            #expect(work.status == 0, "\(work.stderr)")
            #expect(work.stdout == "1 \(given)\n2 \(inherited)\n3 none\n")
        }
    }

    @Test func subscribeAsAGroupMemberAcknowledgesEachEventPrinted() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            #expect(try await runProgram(ctl, ["send", "q", "one", "two", "three"] + socket).status == 0)
            let first = try await runProgram(ctl, ["subscribe", "q", "--group", "g", "--member", "m", "--count", "2"] + socket)
            #expect(first.stdout == "one\ntwo\n")
            // Both were acknowledged before it exited; the next member gets what is left.
            let second = try await runProgram(ctl, ["subscribe", "q", "--group", "g", "--count", "1"] + socket)
            #expect(second.stdout == "three\n")
            let deleted = try await runProgram(ctl, ["groups", "q", "--delete", "g"] + socket)
            #expect(deleted.status == 0)
            let bad = try await runProgram(ctl, ["subscribe", "q", "--group", "g", "--max-deliver", "3"] + socket)
            #expect(bad.status == 64)
            #expect(bad.stderr.contains("--max-deliver needs --dead-letter"))
        }
    }

    /// The sequence numbers of the next `count` EVENT frames.
    static func sequences(_ client: WireClient, _ count: Int) async throws -> [UInt64] {
        var out: [UInt64] = []
        while out.count < count {
            let frame = try await client.expectFrame()
            guard case .event(_, _, let sequence, _, _, _, _, _) = frame else { throw TestFailure("expected an event, got \(frame)") }
            out.append(sequence)
        }
        return out
    }

    @Test func anOperatorAcknowledgesOrGivesBackWhatAStuckMemberHolds() async throws {
        try await withDaemon { daemon in
            let ctl = try replayctl
            let socket = ["--socket", daemon.socketPath]
            #expect(try await runProgram(ctl, ["send", "q", "one", "two"] + socket).status == 0)
            try await withWireClient(daemon.socketPath) { stuck in
                try await stuck.send(.subscribeGroup(stream: "q", sid: "s", start: .all, options: GroupOptions(group: "g", member: "w1", ackWait: 3600)))
                #expect(try await stuck.expectFrame() == .ok)
                #expect(try await Self.sequences(stuck, 2) == [1, 2])
                let acked = try await runProgram(ctl, ["ack", "q", "--group", "g", "--member", "w1", "1"] + socket)
                #expect(acked.status == 0, "\(acked.stderr)")
                // Not held by 'other': refused, and nothing changes.
                let refused = try await runProgram(ctl, ["ack", "q", "--group", "g", "--member", "other", "2"] + socket)
                #expect(refused.status == 1)
                #expect(refused.stderr.contains("does not hold event 2; 'w1' does"))
                let pending = try await runProgram(ctl, ["pending", "q", "g", "--json"] + socket)
                let entries = try JSONDecoder().decode([PendingDescription].self, from: Data(pending.stdout.utf8))
                #expect(entries.map(\.seq) == [2] && entries.first?.member == "w1")
                // Given back, it goes to a member with room: w1 itself, the only one.
                #expect(try await runProgram(ctl, ["nack", "q", "--group", "g", "--member", "w1", "2"] + socket).status == 0)
                #expect(try await Self.sequences(stuck, 1) == [2])
            }
        }
    }
}
