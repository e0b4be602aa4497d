import ArgumentParser
import Foundation
import ReplayClient
import ReplayProtocol
import ReplaySync
import Subprocess
import SystemPackage

struct Work: DaemonCommand, StreamCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a command once per event, as a member of a consumer group: a log as a work queue.",
        discussion: """
            Joins --group on the stream (created on first use, from the stream's first retained \
            event, or from now with --new) and runs the command once per event handed to it, \
            with the payload on its standard input and REPLAY_STREAM, REPLAY_SEQ and \
            REPLAY_GROUP in its environment (and TRACEPARENT, the event's trace context, when \
            its publisher gave one: the command continues that trace); its output goes to \
            replayctl's. Exit 0 \
            acknowledges the event; any other ends it back to the group (after --retry-delay), \
            to be handed out again, to this worker or another, or to --dead-letter after \
            --max-deliver deliveries. Up to --jobs commands run at once, and the member holds \
            no more events than that.

              replayctl work jobs --group mailers --jobs 4 -- ./send-mail.sh

            Runs until Ctrl-C, or until --count events were acknowledged. Several workers on \
            one group share its events, each event to one of them at a time.
            """)

    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl

    @OptionGroup var target: StreamArgument
    @OptionGroup var groupArguments: GroupArguments
    @Option(help: "Commands run at once, and the events this member holds.") var jobs = 1
    @Option(help: ArgumentHelp("Seconds before a failed event is handed out again.", valueName: "seconds"))
    var retryDelay: Double?
    @Option(help: "Exit after this many events were acknowledged.") var count: Int?
    @Flag(help: "A group created by this run starts with events published from now on.") var new = false
    @Argument(parsing: .postTerminator, help: "The command, after --.") var command: [String] = []

    func validate() throws {
        guard groupArguments.group != nil else { throw ValidationError("work needs --group <name>") }
        guard !command.isEmpty else { throw ValidationError("give the command after --: replayctl work <stream> --group <name> -- <command…>") }
        guard (1...GroupOptions.maxPendingLimit).contains(jobs) else { throw ValidationError("--jobs is 1 to \(GroupOptions.maxPendingLimit)") }
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if let retryDelay, !(retryDelay >= 0 && retryDelay <= 86_400) { throw ValidationError("--retry-delay is 0 to 86400 seconds") }
    }

    func run(with client: ReplayClient) async throws {
        guard let options = groupArguments.options(maxPending: jobs) else { return }
        let subscription = try await client.subscribe(stream, from: new ? .new : .all, group: options)
        let acknowledged = Locked(0)
        let (group, command, retryDelay, count) = (options.group, self.command, self.retryDelay, self.count)
        // Ends when the subscription does: Ctrl-C, or `cancel` once --count were acknowledged.
        try await withThrowingTaskGroup(of: Void.self) { jobs in
            for try await event in subscription {
                jobs.addTask {
                    let succeeded = await Self.runJob(command, event: event, group: group)
                    if succeeded {
                        try await subscription.acknowledge(event.sequence)
                        let done = acknowledged.withLock { done in
                            done += 1
                            return done
                        }
                        if let count, done >= count { await subscription.cancel() }
                    } else {
                        try await subscription.giveBack(event.sequence, delay: retryDelay)
                    }
                }
            }
            try await jobs.waitForAll()
        }
    }

    /// Runs the command for one event; whether it exited 0.
    static func runJob(_ command: [String], event: ReplayEvent, group: String) async -> Bool {
        var variables: [Environment.Key: String?] = [
            "REPLAY_STREAM": event.stream, "REPLAY_SEQ": "\(event.sequence)", "REPLAY_GROUP": group,
        ]
        // OpenTelemetry's carrier for a trace context in a process's environment. An
        // untraced event unsets one replayctl itself inherited: it is not that event's.
        variables["TRACEPARENT"] = .some(event.traceParent?.text)
        let environment = Environment.inherit.updating(variables)
        let executable: Executable = command[0].contains("/") ? .path(FilePath(command[0])) : .name(command[0])
        do {
            let result = try await Subprocess.run(
                executable, arguments: Arguments(Array(command.dropFirst())), environment: environment,
                input: .fileDescriptor(try payloadFile(event.payload), closeAfterSpawningProcess: true), output: .currentStandardOutput,
                error: .currentStandardError)
            if case .exited(0) = result.terminationStatus { return true }
            printError("replayctl: \(command[0]) for event \(event.sequence) of \(event.stream) ended with \(result.terminationStatus); handed back")
        } catch {
            printError("replayctl: cannot run \(command[0]): \(error); event \(event.sequence) handed back")
        }
        return false
    }

    /// The payload as an unlinked temporary file, read from its start: the command may
    /// read it or not. (swift-subprocess 1.0.2's `.data` input writes through a pipe, and
    /// its writer traps when the command exits without reading: a command that ignored
    /// its standard input crashed the worker.)
    static func payloadFile(_ payload: Data) throws -> FileDescriptor {
        var path = Array((FileManager.default.temporaryDirectory.path + "/replayctl-work-XXXXXX").utf8CString)
        let raw = path.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard raw >= 0 else { throw Errno(rawValue: errno) }
        unlink(path)
        let file = FileDescriptor(rawValue: raw)
        do {
            _ = try file.writeAll(payload)
            _ = try file.seek(offset: 0, from: .start)
        } catch {
            try? file.close()
            throw error
        }
        return file
    }
}
