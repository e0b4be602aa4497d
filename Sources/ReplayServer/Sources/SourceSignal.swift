import Dispatch
import Foundation
import NIOPosix
import ReplayCore
import Synchronization

/// Why a source ended badly: its exit status (or signal) and the tail of its stderr.
struct SourceFailure: Error, CustomStringConvertible {
    let description: String
}

/// Whether this thread may block: not an event loop, and not the cooperative pool (no task
/// runs on it). The daemon's rule for spawning processes and reading the store.
func mayBlock() -> Bool {
    withUnsafeCurrentTask { $0 == nil } && MultiThreadedEventLoopGroup.currentEventLoop == nil
}

/// A source command as a cold signal: each subscription runs the command once, in a
/// process group of its own, and sends each framed chunk of its output as a value; exit
/// status 0 completes, anything else fails with the status and stderr's last lines.
/// Disposal stops the run (SIGTERM to the group, SIGKILL after the grace period) and sends
/// nothing more: a stop is not an ending.
///
/// `send` is called on the reading thread and may block (the stream's sink does, when the
/// store falls behind): the thread then stops reading, the pipe fills, and the command
/// blocks on its own writes. That is the backpressure.
enum SourceSignal {
    static func make(
        command: String, settings: SourceSettings,
        environment: @escaping @Sendable () -> [String: String],
        started: @escaping @Sendable (pid_t) -> Void,
        stopped: @escaping @Sendable (pid_t) -> Void
    ) -> Signal<Data> {
        Signal { observer in
            assert(mayBlock(), "a source was spawned on an event loop or the cooperative pool; it belongs on the sources' queue")
            let group: ProcessGroup
            do {
                group = try ProcessGroup.spawn(command, environment: environment())
            } catch {
                observer.sendFailed(SourceFailure(description: "\(error)"))
                return Disposables.empty
            }
            started(group.pid)
            let run = RunState()
            let stderrTail = StderrTail()
            let stderrDone = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                stderrTail.drain(group.stderr)
                stderrDone.signal()
            }
            Thread.detachNewThread {
                var framer = Framer(settings.framing)
                var chunk = [UInt8](repeating: 0, count: 64 * 1024)
                while true {
                    let count = read(group.stdout, &chunk, chunk.count)
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    for event in framer.feed(Data(chunk[0..<count])) { observer.send(event) }
                }
                if let last = framer.finish(), !last.isEmpty { observer.send(last) }
                close(group.stdout)
                let status = group.wait()
                run.reaped.store(true, ordering: .releasing)
                // stderr closes when the group's last process does; do not wait on strays.
                _ = stderrDone.wait(timeout: .now() + 1)
                guard !run.stopping.load(ordering: .acquiring) else { return stopped(group.pid) }
                if let failure = Self.failure(status: status, stderr: stderrTail.text) {
                    observer.sendFailed(failure)
                } else {
                    observer.sendCompleted()
                }
            }
            return ActionDisposable {
                run.stopping.store(true, ordering: .releasing)
                group.signal(SIGTERM)
                DispatchQueue.global().asyncAfter(deadline: .now() + settings.grace) {
                    if !run.reaped.load(ordering: .acquiring) { group.signal(SIGKILL) }
                }
            }
        }
    }

    /// `nil` for exit status 0.
    static func failure(status: Int32, stderr: String) -> SourceFailure? {
        let signal = status & 0x7F
        let code = (status >> 8) & 0xFF
        let reason: String
        if signal == 0 {
            guard code != 0 else { return nil }
            reason = "exit status \(code)"
        } else {
            reason = "killed by signal \(signal)"
        }
        return SourceFailure(description: stderr.isEmpty ? reason : "\(reason); stderr:\n\(stderr)")
    }
}

/// Flags shared by a run's reader thread and its disposal.
private final class RunState: Sendable {
    let stopping = Atomic(false)
    let reaped = Atomic(false)
}

/// The last lines a source wrote to stderr (at most 20 lines and 4 KiB).
final class StderrTail: Sendable {
    private let lines = Locked<[String]>([])

    func drain(_ fd: Int32) {
        var partial = Data()
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            partial.append(contentsOf: chunk[0..<count])
            while let newline = partial.firstIndex(of: 0x0A) {
                keep(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
                partial = Data(partial[(newline + 1)...])
            }
            if partial.count > 4096 { keep(String(decoding: partial, as: UTF8.self)); partial = Data() }
        }
        if !partial.isEmpty { keep(String(decoding: partial, as: UTF8.self)) }
        close(fd)
    }

    private func keep(_ line: String) {
        lines.withLock { lines in
            lines.append(String(line.prefix(1024)))
            if lines.count > 20 { lines.removeFirst(lines.count - 20) }
        }
    }

    var text: String { lines.withLock { $0.joined(separator: "\n") } }
}
