import Foundation
import NIOPosix
import ReplayCore
import ReplayModel
import ReplaySync
import Subprocess

/// Why a source ended badly: its exit status (or signal) and the tail of its stderr.
struct SourceFailure: Error, CustomStringConvertible {
    let description: String
}

/// Whether this thread may block: not an event loop, and not the cooperative pool (no task
/// runs on it). The daemon's rule for reading the store.
func mayBlock() -> Bool {
    withUnsafeCurrentTask { $0 == nil } && MultiThreadedEventLoopGroup.currentEventLoop == nil
}

/// A source command as a cold signal: each subscription runs `/bin/sh -c command` once
/// (swift-subprocess: spawned on its own thread, in a process group of its own so that one
/// signal reaches every process of the pipeline) and sends each framed chunk of its
/// output as a value; exit status 0 completes, anything else fails with the status and
/// stderr's last lines. Disposal stops the run (SIGTERM to the group, SIGKILL after the
/// grace period: subprocess's teardown sequence) and sends nothing more: a stop is not an
/// ending.
///
/// Back-pressure: standard output is read only after `admit` lets each event in (the
/// stream's sink, when too many appends await their commit). While it waits, the pipe
/// fills and the command blocks on its own writes.
enum SourceSignal {
    static func make(
        command: String, settings: SourceOptions, runs: SourceRuns,
        environment additions: @escaping @Sendable () -> [String: String],
        admit: @escaping @Sendable () async -> Void,
        started: @escaping @Sendable (pid_t) -> Void,
        stopped: @escaping @Sendable (pid_t) -> Void
    ) -> ReplayCore.Signal<Data> {
        ReplayCore.Signal { observer in
            // The environment reads the store: here, on the sources' queue (or the restart
            // scheduler's), never in the task below.
            assert(mayBlock(), "a source was started on an event loop or the cooperative pool; it belongs on the sources' queue")
            let environment = Environment.inherit.updating(
                .init(uniqueKeysWithValues: additions().compactMap { key, value in Environment.Key(rawValue: key).map { ($0, value) } }))
            var options = PlatformOptions()
            options.processGroupID = 0
            options.teardownSequence = [.gracefulShutDown(toProcessGroup: true, allowedDurationToNextStep: .seconds(settings.grace))]
            let run = runs.start { [options] in
                let stderr = StderrTail()
                let pid = Locked<pid_t>(0)
                let outcome: Result<TerminationStatus, any Error>
                do {
                    outcome = .success(
                        try await Subprocess.run(
                            .path("/bin/sh"), arguments: ["-c", command],
                            environment: environment,
                            platformOptions: options, input: .none, output: .sequence, error: .sequence
                        ) { execution in
                            pid.withLock { $0 = execution.processIdentifier.value }
                            started(execution.processIdentifier.value)
                            try await withThrowingTaskGroup(of: Void.self) { group in
                                group.addTask { await stderr.drain(execution.standardError) }
                                var framer = Framer(settings.framing)
                                reading: for try await chunk in execution.standardOutput {
                                    for event in chunk.withUnsafeBytes({ framer.feed(Data($0)) }) {
                                        await admit()
                                        // Cancelled (stopped): stop reading altogether, so the run
                                        // ends and its process group is torn down.
                                        guard !Task.isCancelled else { break reading }
                                        observer.send(event)
                                    }
                                    // A command that writes faster than it is read always has a
                                    // chunk ready and the admission window may be open: without a
                                    // yield, two such readers held both threads of the cooperative
                                    // pool and starved the shutdown that would stop them.
                                    await Task.yield()
                                }
                                if let last = framer.finish(), !last.isEmpty, !Task.isCancelled {
                                    await admit()
                                    observer.send(last)
                                }
                                // stderr closes when the group's last process does: give it a
                                // moment, do not wait on strays that keep it open.
                                group.addTask { try await Task.sleep(for: .seconds(1)) }
                                _ = try await group.next()
                                group.cancelAll()
                            }
                        }.terminationStatus)
                } catch {
                    outcome = .failure(error)
                }
                guard !Task.isCancelled else {
                    let group = pid.withLock { $0 }
                    // Not cancelled with the run: the strays get their grace period.
                    await Task.detached { await Self.killStrays(of: group, after: settings.grace) }.value
                    return stopped(group)
                }
                switch outcome {
                case .success(let status):
                    if let failure = Self.failure(status, stderr: stderr.text) {
                        observer.sendFailed(failure)
                    } else {
                        observer.sendCompleted()
                    }
                case .failure(let error):
                    observer.sendFailed(SourceFailure(description: "cannot run /bin/sh: \(error)"))
                }
            }
            return ActionDisposable { run.cancel() }
        }
    }

    /// After a stop the shell is gone (subprocess's teardown waits for it alone), but a
    /// process of its group that ignored SIGTERM may live on, holding the source's work:
    /// it gets the grace period, then SIGKILL, as systemd treats a unit's control group.
    /// (The group id is checked just before; its reuse within the grace period would need
    /// the whole group gone and the pid recycled meanwhile.)
    static func killStrays(of group: pid_t, after grace: Double) async {
        guard group > 0 else { return }
        let deadline = ContinuousClock.now + .seconds(grace)
        while kill(-group, 0) == 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        if kill(-group, 0) == 0 { kill(-group, SIGKILL) }
    }

    /// `nil` for exit status 0.
    static func failure(_ status: TerminationStatus, stderr: String) -> SourceFailure? {
        let reason: String
        switch status {
        case .exited(0): return nil
        case .exited(let code): reason = "exit status \(code)"
        case .signaled(let signal): reason = "killed by signal \(signal)"
        }
        return SourceFailure(description: stderr.isEmpty ? reason : "\(reason); stderr:\n\(stderr)")
    }
}

/// The last lines a source wrote to stderr (at most 20 lines of at most 1 KiB).
final class StderrTail: Sendable {
    private let lines = Locked<[String]>([])

    /// Reads stderr to its end (or until cancelled); a read error only ends the tail.
    func drain(_ output: SubprocessOutputSequence) async {
        do {
            for try await line in output.strings(bufferingPolicy: .maxLineLength(4096)) { keep(line) }
        } catch {}
    }

    private func keep(_ line: String) {
        lines.withLock { lines in
            lines.append(String(line.prefix(1024)))
            if lines.count > 20 { lines.removeFirst(lines.count - 20) }
        }
    }

    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}
