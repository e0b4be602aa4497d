import Dispatch
import Foundation
import Logging
import ReplayDerive
import ReplayModel
import ReplayProtocol
import ReplayStore
import ReplaySync
import ServiceLifecycle

/// The runners of every derived stream, kept in step with the store: a definition gets a
/// runner, a redefinition a new one, a deleted derived stream's runner is retired. Commits
/// to a runner's inputs wake it.
///
/// As a service it starts the runners of the stored derivations (eager ones compute at
/// once, as `replay()` connects) and, at the graceful shutdown, retires them and returns
/// once their threads have ended, so the store closes after their last read: each ends
/// after the step it is computing (a step not yet committed is computed again at the
/// next start).
final class DerivationRegistry: Service, Sendable {
    private let runners = Locked<[String: DerivationRunner]>([:])
    /// Retired (by a redefinition, a deletion or the shutdown) and maybe still finishing a
    /// step: the shutdown waits for them.
    private let retired = Locked<[DerivationRunner]>([])
    private let store: EventStore
    private let logger: Logger
    private let budget: JQProgram.Budget
    private let started = Locked(false)
    /// Set at the graceful shutdown: nothing is adopted after it.
    private let stopped = Locked(false)
    /// Where the stored derivations are read (blocking): never the cooperative pool.
    private let control = DispatchQueue(label: "replay.derivations")
    /// How often a daemon sharing its database looks for derivations another daemon defined.
    static let sharedPoll = DispatchTimeInterval.seconds(2)

    init(store: EventStore, budget: JQProgram.Budget = .init(), logger: Logger) {
        self.store = store
        self.budget = budget
        self.logger = logger
    }

    func run() async throws {
        try started.withLock { started in
            guard !started else { throw ReplayServerError("the derivations service runs once") }
            started = true
        }
        store.onCommit { [weak self] batch in self?.notice(batch) }
        let stored = try await withCheckedThrowingContinuation { continuation in
            control.async { [store] in continuation.resume(with: Result { try store.derivations() }) }
        }
        for derivation in stored { adopt(derivation) }
        if store.isShared { control.asyncAfter(deadline: .now() + Self.sharedPoll) { [weak self] in self?.adoptDefinedElsewhere() } }
        try? await gracefulShutdown()
        stopped.withLock { $0 = true }
        let retiring = runners.withLock { runners in
            defer { runners.removeAll() }
            return Array(runners.values)
        }
        for runner in retiring { retire(runner) }
        // The store service stops after this one and closes the store: not before every
        // runner is done with it.
        for runner in retired.withLock({ $0 }) { await runner.ended() }
    }

    /// No runner's thread is left: what the shutdown waits for before the store closes.
    var hasEnded: Bool {
        runners.withLock { $0.isEmpty } && retired.withLock { $0.allSatisfy(\.hasEnded) }
    }

    /// Checks a definition (its words, then its program, compiled as it will run), then
    /// has the writer create, confirm or rebuild it; its runner starts with the answer.
    func define(
        _ stream: String, definition: String, options: DeriveOptions, defaultCapacity: Int?,
        completion: @escaping @Sendable (Result<Derivation, ReplayError>) -> Void
    ) {
        let spec: DerivationSpec
        do throws(ReplayError) {
            spec = try Self.checked(definition, for: stream)
        } catch {
            return completion(.failure(error))
        }
        let capacity: Int? =
            switch options.capacity {
            case .count(let n): n
            case .unlimited: nil
            case nil: defaultCapacity
            }
        store.define(DerivationDefinition(stream: stream, spec: spec, config: StreamConfig(capacity: capacity), rebuild: options.rebuild)) {
            [self] result in
            switch result {
            case .success(let derivation):
                if options.rebuild || runners.withLock({ $0[stream] }) == nil { replace(with: derivation) }
                completion(.success(derivation))
            case .failure(let error):
                completion(.failure(ReplayError(error)))
            }
        }
    }

    /// A definition's JSON, checked: its words (`DerivationSpec.validate`), then its program,
    /// compiled as it will run. What `DERIVE` and the `--config` declarations both check.
    static func checked(_ definition: String, for stream: String) throws(ReplayError) -> DerivationSpec {
        let spec: DerivationSpec
        do throws(DerivationSpec.Invalid) {
            spec = try DerivationSpec(json: definition)
            try spec.validate(output: stream)
        } catch {
            throw ReplayError(.invalidConfig, error.message)
        }
        do throws(JQProgram.Failure) {
            _ = try DerivationEngine(spec)
        } catch {
            throw ReplayError(.invalidConfig, "the program is refused: \(error.message)")
        }
        return spec
    }

    /// A subscriber of `stream` arrived: a lazy derivation connects, a refcount one runs
    /// while it stays. The result is called when it leaves.
    func lease(_ stream: String) -> (@Sendable () -> Void)? {
        runners.withLock { $0[stream] }?.lease()
    }

    func describe(_ stream: String) -> DerivationDescription? {
        runners.withLock { $0[stream] }?.describe()
    }

    var all: [DerivationDescription] {
        runners.withLock { Array($0.values) }.map { $0.describe() }.sorted { $0.stream < $1.stream }
    }

    /// On a shared database: derivations another daemon defined get a runner here too, which
    /// stands by until this daemon holds their claim (see `DerivationRunner`).
    private func adoptDefinedElsewhere() {
        guard let stored = try? store.derivations() else { return schedulePoll() }
        for derivation in stored where !stopped.value && runners.withLock({ $0[derivation.stream] }) == nil {
            adopt(derivation)
        }
        schedulePoll()
    }

    private func schedulePoll() {
        guard !stopped.value else { return }
        control.asyncAfter(deadline: .now() + Self.sharedPoll) { [weak self] in self?.adoptDefinedElsewhere() }
    }

    private func adopt(_ derivation: Derivation) {
        let runner = DerivationRunner(derivation, store: store, budget: budget, logger: logger)
        runners.withLock { $0[derivation.stream] = runner }
        runner.start()
    }

    private func replace(with derivation: Derivation) {
        if let old = runners.withLock({ $0.removeValue(forKey: derivation.stream) }) { retire(old) }
        adopt(derivation)
    }

    /// On the writer's thread, after each commit: only hands the news on. A deleted derived
    /// stream retires its runner; a change to a stream a runner reads (or to its own stream:
    /// a reset) wakes it.
    private func notice(_ batch: CommitBatch) {
        let current = runners.withLock { $0 }
        guard !current.isEmpty else { return }
        for (name, change) in batch.changes {
            if change.info == nil, let gone = runners.withLock({ $0.removeValue(forKey: name) }) {
                retire(gone)
                continue
            }
            for runner in current.values where runner.reads(name) { runner.wake() }
        }
    }

    /// Retires a runner the registry no longer holds, and keeps it until its thread ends.
    private func retire(_ runner: DerivationRunner) {
        runner.retire()
        retired.withLock { retired in
            retired.removeAll { $0.hasEnded }
            retired.append(runner)
        }
    }
}
