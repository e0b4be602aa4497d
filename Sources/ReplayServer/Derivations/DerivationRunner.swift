import Foundation
import Logging
import ReplayDerive
import ReplayModel
import ReplayProtocol
import ReplayStore

/// Computes one derived stream, on a thread of its own: reads its inputs after its
/// committed positions, runs the operators (`DerivationEngine`, jq), and hands the writer
/// one step with the outputs, the new state and the new positions. While the writer
/// commits that step, the runner computes the next one from where it leaves off, and hands
/// it over once the first is committed: one step in flight, so that computing and
/// committing overlap (computing and committing one after the other left both threads
/// idle half the time in a catch-up). The engine's state runs ahead of the store only by
/// the steps not yet committed: if a commit fails, the step computed ahead is dropped and
/// the engine is made again from the committed state.
///
/// A thread, not a task: jq's interpreter is confined to one thread (see `JQProgram`), and
/// a program may run long; on the cooperative pool it would hold a thread that connections
/// need, on the writer it would stall every commit.
final class DerivationRunner: @unchecked Sendable {
    /// Where the runner stands; guarded by `condition`.
    private struct Control {
        var wakes = 0
        var leases = 0
        var retired = false
        /// lazy: a subscriber came once; it keeps computing since.
        var connected = false
        var status: DerivationDescription.Status = .running
        var committed: Derivation
        /// Another daemon sharing the database computes it.
        var standby = false
        /// Input events computed, with the time, for the rate.
        var samples: [(at: ContinuousClock.Instant, processed: UInt64)] = []
    }

    let stream: String
    /// What it reads, fixed for its life (a redefinition makes a new runner): looked up on
    /// the writer's thread after every commit.
    private let inputs: Set<String>
    private let patterns: [StreamPattern]
    private let store: EventStore
    private let budget: JQProgram.Budget
    private let logger: Logger
    private let condition = NSCondition()
    private var control: Control
    /// Entered while its thread runs: the store must outlive every read and commit of it.
    private let running = DispatchGroup()
    /// How much one step may carry, so the writer's batches stay small.
    static let maxOutputsPerStep = 4096
    static let maxBytesPerStep = 4 << 20

    init(_ derivation: Derivation, store: EventStore, budget: JQProgram.Budget, logger: Logger) {
        self.stream = derivation.stream
        let spec = derivation.spec
        inputs = Set(spec.inputs + (spec.takeUntil.map { [$0] } ?? []))
        patterns = spec.inputs.compactMap { input in
            guard StreamPattern.isPattern(input), case .success(let pattern) = StreamPattern.parse(input) else { return nil }
            return pattern
        }
        self.store = store
        self.budget = budget
        self.logger = logger
        // A lazy derivation that committed a step was connected before: it goes on.
        control = Control(connected: derivation.state != nil, committed: derivation)
    }

    /// Whether a commit to `name` concerns it: an input, or its own stream (a reset).
    func reads(_ name: String) -> Bool {
        name == stream || inputs.contains(name) || patterns.contains { $0.matches(name) }
    }

    func start() {
        running.enter()
        let thread = Thread { [self] in
            run()
            running.leave()
        }
        thread.name = "replay.derive"
        thread.start()
    }

    /// New events in an input, or a change to the derived stream: look again.
    func wake() {
        locked { $0.wakes += 1 }
        condition.signal()
    }

    /// Stops the runner after its current step (a deleted stream, a redefinition, shutdown).
    func retire() {
        locked { $0.retired = true }
        condition.broadcast()
    }

    /// Its thread has ended (or never started).
    var hasEnded: Bool { running.wait(timeout: .now()) == .success }

    /// Returns once its thread has ended, with its page read ahead and its helper: at
    /// shutdown the store closes next, and a read still running on a closed database
    /// reaches SQLite through a connection already freed.
    func ended() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            running.notify(queue: .global()) { done.resume() }
        }
    }

    /// A subscriber of the derived stream arrived (lazy and refcount derivations compute);
    /// disposing the result says it left.
    func lease() -> @Sendable () -> Void {
        locked { control in
            control.leases += 1
            control.connected = true
        }
        condition.broadcast()
        return { [self] in
            locked { $0.leases -= 1 }
            // So that the status says `waiting` once the last one left.
            condition.broadcast()
        }
    }

    /// What DERIVATIONS, INFO, the page and `top` show.
    func describe() -> DerivationDescription {
        let (derivation, status, rate) = locked { control -> (Derivation, DerivationDescription.Status, Double) in
            var rate = 0.0
            if let first = control.samples.first, let last = control.samples.last, last.at > first.at {
                rate = Double(last.processed - first.processed) / ((last.at - first.at) / .seconds(1))
            }
            return (control.committed, control.status, rate)
        }
        let inputs = InputReader(store: store, spec: derivation.spec, derived: stream).streams()
        // Behind each input's first retained event counts from there: what retention took
        // will never be computed.
        let lag = inputs.reduce(UInt64(0)) { total, info in
            let position = max(derivation.positions[info.name] ?? 0, info.firstSequence > 0 ? info.firstSequence - 1 : 0)
            return total + ReplayModel.lag(last: info.lastSequence, position: position)
        }
        let spec = derivation.spec
        return DerivationDescription(
            stream: stream, inputs: spec.inputs, program: spec.program, scan: spec.scan, connect: spec.connect.rawValue,
            onError: spec.onError.description, status: status, lag: lag, positions: derivation.positions, processed: derivation.processed,
            errors: derivation.errors, error: derivation.error, rate: rate, stateBytes: derivation.state?.utf8.count ?? 0,
            lastSeq: store.info(stream)?.lastSequence ?? 0)
    }

    // MARK: The thread

    private func run() {
        var engine: DerivationEngine?
        /// The step computed while the one before it committed, not yet handed over.
        var ahead: DerivationStep?
        /// Its input's pages, each read while the one before is computed, and computed on
        /// two threads for a stateless program.
        var pages = ComputedPages(program: locked { $0.committed.spec.program }, budget: budget)
        defer {
            pages.retire()
            if store.isShared { store.releaseSource(stream) }
        }
        while var derivation = waitForTurn() {
            guard holdsClaim() else {
                engine = nil
                ahead = nil
                idle(seconds: 1)
                continue
            }
            // As stored, if a claim just taken read it again.
            derivation = locked { $0.committed }
            do {
                if engine == nil {
                    ahead = nil
                    engine = try DerivationEngine(derivation.spec, state: derivation.state, budget: budget)
                }
            } catch {
                // A definition that compiled at creation but not now (a damaged state).
                _ = commit(stopping(derivation, because: error.message)).wait()
                continue
            }
            let step: DerivationStep
            if let computed = ahead, computed.expected == derivation.positions {
                step = computed
            } else if let prepared = prepare(derivation, engine!, pages: &pages) {
                step = prepared
            } else {
                idle()
                continue
            }
            let pending = commit(step)
            ahead = step.stop || step.terminal != nil ? nil : prepare(Self.advanced(derivation, by: step), engine!, pages: &pages)
            switch pending.wait() {
            case .success: break
            case .failure(.derivationConflict):
                // Redefined or moved under it: start again from what is stored.
                engine = nil
                reload()
            case .failure(let error):
                // Nothing was written: the engine's state ran ahead of the store.
                engine = nil
                logger.warning("derivation step not committed; retrying", metadata: ["stream": "\(stream)", "error": "\(error)"])
                idle(seconds: 1)
            }
        }
    }

    /// Where the derivation will stand once `step` is committed: the next step reads from
    /// there.
    static func advanced(_ derivation: Derivation, by step: DerivationStep) -> Derivation {
        var next = derivation
        next.positions = step.positions
        next.state = step.state
        return next
    }

    /// On a database several daemons share, one computes each derivation: the one that
    /// holds its claim (the same as a source's, released when its daemon's session ends).
    /// The others stand by, asking again every second; one that gets it starts from what
    /// is stored, and the positions each step names keep a daemon that lost it harmless.
    private func holdsClaim() -> Bool {
        guard store.isShared, !store.holdsSource(stream) else { return true }
        let claimed = store.claimSource(stream)
        reload()
        locked { $0.standby = !claimed }
        return claimed
    }

    /// Blocks until the runner may compute; `nil` once it is retired.
    private func waitForTurn() -> Derivation? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if control.retired { return nil }
            let derivation = control.committed
            let ended = store.info(stream)?.terminal != nil
            let mayRun: Bool
            switch derivation.spec.connect {
            case .eager: mayRun = true
            case .lazy: mayRun = control.connected
            case .refcount: mayRun = control.leases > 0
            }
            control.status =
                derivation.status == .stopped
                ? .stopped : ended ? .completed : !mayRun ? .waiting : control.standby ? .standby : .running
            if mayRun, derivation.status == .running, !ended { return derivation }
            condition.wait()
        }
    }

    /// Waits for a wake (new input events), at most `seconds`.
    private func idle(seconds: Double = 5) {
        condition.lock()
        defer { condition.unlock() }
        if control.wakes == 0, !control.retired { _ = condition.wait(until: Date(timeIntervalSinceNow: seconds)) }
        control.wakes = 0
    }

    /// The next step: the events after the committed positions, computed. `nil`: nothing
    /// to do (caught up, and not a lazy derivation's first step, which is committed even
    /// empty so that it stays connected across restarts).
    private func prepare(_ derivation: Derivation, _ engine: DerivationEngine, pages: inout ComputedPages) -> DerivationStep? {
        locked { $0.wakes = 0 }
        let reader = InputReader(store: store, spec: derivation.spec, derived: stream)
        let inputs = reader.streams()
        // A catch-up's next page is read meanwhile, and a stateless program's page is
        // computed on two threads first, then fed in order (`ComputedPages`).
        let page: ComputedPages.Page
        do {
            page = try pages.next(reader, inputs, after: derivation.positions, stateless: engine.isStateless, compute: engine.compute)
        } catch {
            logger.warning("derivation could not read its inputs", metadata: ["stream": "\(stream)", "error": "\(error)"])
            return nil
        }
        var step = DerivationStep(stream: stream, expected: derivation.positions, positions: derivation.positions, state: derivation.state)
        if case .deadLetter(let target) = derivation.spec.onError { step.deadLetterStream = target }
        // Most programs give at most one output an event: grown from empty, the array was
        // copied at every doubling.
        let events = page.events
        step.outputs.reserveCapacity(min(events.count, Self.maxOutputsPerStep))
        var bytes = 0
        for (index, event) in events.enumerated() {
            if step.outputs.count >= Self.maxOutputsPerStep || bytes >= Self.maxBytesPerStep { break }
            do {
                let outputs: [DerivedOutput]
                if let computed = page.computed {
                    outputs = try engine.feed(event, computed: computed[index])
                } else {
                    outputs = try engine.feed(event)
                }
                step.outputs += outputs
                bytes += outputs.reduce(0) { $0 + $1.payload.count }
            } catch {
                let message = "\(event.stream) seq \(event.sequence): \(error.message)"
                step.error = message
                switch derivation.spec.onError {
                case .skip:
                    step.errors += 1
                case .stop:
                    // The event stays unread: a redefinition computes it again.
                    step.errors += 1
                    step.stop = true
                case .deadLetter:
                    step.errors += 1
                    step.deadLetters.append(Self.deadLetter(event, error: error.message))
                }
                if step.stop { break }
            }
            step.processed += 1
            if engine.isCompleted { break }
        }
        // Where the events computed leave each input, set once rather than per event, and
        // already worked out for the read ahead when the whole page was computed.
        step.positions =
            if step.processed == events.count, let end = page.end { end } else {
                ComputedPages.positions(after: events.prefix(Int(step.processed)), from: derivation.positions)
            }
        if !engine.isCompleted, let end = Self.end(of: derivation.spec, inputs, step.positions) {
            engine.complete()
            step.terminal = end
        }
        if engine.isCompleted, step.terminal == nil { step.terminal = .completed }
        let firstStep = derivation.state == nil
        guard step.processed > 0 || step.terminal != nil || firstStep else { return nil }
        step.state = engine.state.json
        return step
    }

    /// The derived stream's end when its inputs ended (named inputs only: a pattern's
    /// streams never all end) and everything they hold was computed: failed if one failed.
    static func end(of spec: DerivationSpec, _ inputs: [StreamInfo], _ positions: [String: UInt64]) -> Terminal? {
        guard !spec.inputs.contains(where: StreamPattern.isPattern) else { return nil }
        let read = inputs.filter { spec.inputs.contains($0.name) }
        guard read.count == spec.inputs.count, read.allSatisfy({ $0.terminal != nil && (positions[$0.name] ?? 0) >= $0.lastSequence }) else {
            return nil
        }
        for info in read {
            if case .failed(let message) = info.terminal { return .failed(message: "input '\(info.name)' failed: \(message)") }
        }
        return .completed
    }

    /// A dead letter: the event (as text, since it may not be JSON) and why it failed.
    static func deadLetter(_ event: InputEvent, error: String) -> Data {
        let letter: [String: Any] = [
            "stream": event.stream, "seq": event.sequence, "error": error, "event": String(decoding: event.payload, as: UTF8.self),
        ]
        return (try? JSONSerialization.data(withJSONObject: letter, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
    }

    private func stopping(_ derivation: Derivation, because reason: String) -> DerivationStep {
        var step = DerivationStep(stream: stream, expected: derivation.positions, positions: derivation.positions, state: derivation.state)
        step.stop = true
        step.error = reason
        return step
    }

    /// Hands the step to the writer; the result's `wait` gives its commit (this thread may
    /// wait).
    private func commit(_ step: DerivationStep) -> PendingCommit {
        let pending = PendingCommit(runner: self, step: step)
        store.commit(step) { result in
            pending.result = result
            pending.done.signal()
        }
        return pending
    }

    /// A step at the writer. The writer's callback sets `result` before it signals, and
    /// the runner's thread reads it only after the signal: the semaphore orders the two.
    private final class PendingCommit: @unchecked Sendable {
        let runner: DerivationRunner
        let step: DerivationStep
        let done = DispatchSemaphore(value: 0)
        var result: Result<Derivation, StoreError>?

        init(runner: DerivationRunner, step: DerivationStep) {
            self.runner = runner
            self.step = step
        }

        func wait() -> Result<Derivation, StoreError> {
            done.wait()
            let result = result!
            if case .success(let derivation) = result { runner.committed(derivation, by: step) }
            return result
        }
    }

    private func committed(_ derivation: Derivation, by step: DerivationStep) {
        locked { control in
            control.committed = derivation
            control.samples.append((.now, derivation.processed))
            if control.samples.count > 8 { control.samples.removeFirst() }
        }
        if step.stop { logger.warning("derivation stopped", metadata: ["stream": "\(stream)", "error": "\(step.error ?? "")"]) }
    }

    /// The derivation as stored, after a conflict.
    private func reload() {
        guard let all = try? store.derivations() else { return }
        guard let stored = all.first(where: { $0.stream == stream }) else {
            // Deleted, by this daemon or another.
            retire()
            return
        }
        locked { $0.committed = stored }
    }

    private func locked<T>(_ body: (inout Control) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&control)
    }
}
