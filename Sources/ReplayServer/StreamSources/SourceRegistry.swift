import Dispatch
import Foundation
import Logging
import ReplayCore
import ReplayProtocol
import ReplayStore
import ReplaySync
import ServiceLifecycle

/// The supervisors of every stream that has a source, kept in step with the store: a
/// stream created with a source gets one, a deleted stream's is retired, a reset re-arms.
///
/// As a service it starts the sources of the existing streams and, at the graceful
/// shutdown, stops them all (after the listener: no subscriber is left to lease one).
final class SourceRegistry: Service, Sendable {
    private let supervisors = Locked<[String: SourceSupervisor]>([:])
    /// Whether each stream was terminal in the last commit seen: a reset is a change from
    /// terminal to open *in the commits*, not a difference with the supervisor's status
    /// (which runs ahead of the commits of the source's own output).
    private let terminalInCommits = Locked<[String: Bool]>([:])
    private let store: EventStore
    private let logger: Logger
    /// Where every source is started, stopped and leased. Spawning a process and reading
    /// the store for its environment block: never on an event loop or the cooperative pool
    /// (a connection's task), where they would stall unrelated clients; never on the
    /// writer's thread, where commit listeners run.
    private let control: DispatchQueue
    private let started = Locked(false)
    private let runs = SourceRuns()

    /// `control` is given only by tests, which hold it back to see what waits for it.
    init(store: EventStore, logger: Logger, control: DispatchQueue = DispatchQueue(label: "replay.sources")) {
        self.store = store
        self.logger = logger
        self.control = control
    }

    func run() async throws {
        try started.withLock { started in
            guard !started else { throw ReplayServerError("the sources service runs once") }
            started = true
        }
        start()
        try? await gracefulShutdown()
        await stopAll()
    }

    /// Starts the sources of the existing streams (eager ones run now) and follows commits.
    private func start() {
        let streams = store.streams
        control.async { [self] in
            for info in streams {
                terminalInCommits.withLock { $0[info.name] = info.terminal != nil }
                adopt(info)
            }
        }
        store.onCommit { [weak self] batch in
            guard let self, Self.concernsSources(batch) else { return }
            control.async { self.apply(batch) }
        }
    }

    /// Whether a commit can start, retire or reset a source: it deleted a stream, or it
    /// changed one that has a source (a stream's source is set when it is created, never
    /// later). Most commits are neither; handing each of them to `control` woke a thread
    /// per commit, a tenth of the writer's time in a work queue.
    static func concernsSources(_ batch: CommitBatch) -> Bool {
        batch.changes.values.contains { change in
            guard let info = change.info else { return true }
            return info.config.source != nil
        }
    }

    private func apply(_ batch: CommitBatch) {
        for (name, change) in batch.changes {
            guard let info = change.info else {
                terminalInCommits.withLock { _ = $0.removeValue(forKey: name) }
                supervisors.withLock { $0.removeValue(forKey: name) }?.retire()
                continue
            }
            let wasTerminal = terminalInCommits.withLock { seen in
                defer { seen[name] = info.terminal != nil }
                return seen[name] ?? false
            }
            if let supervisor = supervisors.withLock({ $0[name] }) {
                if wasTerminal, info.terminal == nil { supervisor.reset() }
            } else {
                adopt(info)
            }
        }
    }

    /// Once per stream: a lease may have adopted it first (`supervisor(of:)`).
    private func adopt(_ info: StreamInfo) {
        guard let source = info.config.source, supervisors.withLock({ $0[info.name] }) == nil else { return }
        let supervisor = SourceSupervisor(stream: info.name, source: source, store: store, control: control, runs: runs, logger: logger)
        supervisors.withLock { $0[info.name] = supervisor }
        supervisor.activate()
    }

    /// A subscriber of `stream` arrived (lazy and refcount sources connect); the result is
    /// disposed when it leaves. The supervisor is looked up on the sources' queue: a stream
    /// created a moment ago is adopted there (a commit hands it over before its creator is
    /// answered), and a subscriber that came straight after the answer found no supervisor
    /// yet, or one not yet armed, and its source never connected.
    func lease(_ stream: String) -> any Disposable {
        // Most streams have no source (a source is set at creation, never later): no hop.
        guard store.info(stream)?.config.source != nil else { return Disposables.empty }
        let lease = SerialDisposable()
        control.async { [self] in
            // A subscriber gone meanwhile disposed `lease`, and what is set now is disposed at once.
            lease.inner = supervisor(of: stream)?.lease() ?? Disposables.empty
        }
        return lease
    }

    /// On the sources' queue: `stream`'s supervisor, adopting the stream now if nothing has
    /// yet. A lease can get here first: taken before this service's `run` followed the
    /// commits (at the daemon's start, a client may be served before it), its block is
    /// ahead of the scan of the existing streams, and the creation's commit was never seen.
    private func supervisor(of stream: String) -> SourceSupervisor? {
        dispatchPrecondition(condition: .onQueue(control))
        if let supervisor = supervisors.withLock({ $0[stream] }) { return supervisor }
        guard let info = store.info(stream) else { return nil }
        adopt(info)
        return supervisors.withLock { $0[stream] }
    }

    /// For INFO. A stream created a moment ago may not be adopted yet (that happens on the
    /// sources' queue): its source is described as not connected, as it is.
    func describe(_ stream: String) -> SourceDescription? {
        if let supervisor = supervisors.withLock({ $0[stream] }) { return supervisor.description }
        return store.info(stream)?.config.source.map { source in
            SourceSupervisor.describe(source, nextTick: source.options.schedule?.next(after: Date()))
        }
    }

    /// Shutdown: stop every source (not an ending: they run again at the next start), after
    /// everything already handed to the sources' queue, and wait until their process groups
    /// are gone, without holding a thread.
    private func stopAll() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            control.async { [self] in
                for supervisor in supervisors.withLock({ Array($0.values) }) { supervisor.retire() }
                done.resume()
            }
        }
        await runs.waitForAll()
    }
}
