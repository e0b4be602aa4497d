import ReplaySync

/// An action that runs a signal per execution and reports on the executions (E19).
///
/// `execute(_:)` makes the execution signal, turns it hot through a replay subject and
/// connects it, so the work runs once whatever the number of subscribers, and whether or
/// not anyone subscribes. Errors of executions are sent as values of `errors`, never as
/// failures of `executionSignals`.
///
/// ```swift
/// let login = Command<String, Bool> { name in Signal.just(name == "ada") }
/// login.executionSignals.subscribe(next: { $0.subscribe(next: { print("ok:", $0) }) })
/// login.execute("ada")     // prints "ok: true"
/// ```
public final class Command<Input: Sendable, Output: Sendable>: Sendable {
    /// Why an execution was refused.
    public enum Error: Swift.Error, Equatable, CustomStringConvertible {
        case notEnabled

        public var description: String {
            "the command is executing and does not allow concurrent execution"
        }
    }

    /// Whether a new execution may start while another runs.
    public let allowsConcurrentExecution: Bool

    private let work: @Sendable (Input) -> Signal<Output>
    private let executions = Subject<Signal<Output>>()
    private let errorsSubject = Subject<any Swift.Error>()
    private let executingSubject = ReplaySubject<Bool>(capacity: 1)
    private let running = Locked(0)

    public init(
        allowsConcurrentExecution: Bool = false,
        _ work: @escaping @Sendable (Input) -> Signal<Output>
    ) {
        self.allowsConcurrentExecution = allowsConcurrentExecution
        self.work = work
        executingSubject.send(false)
    }

    /// A signal of the execution signals, one per `execute`; each has its errors removed.
    public var executionSignals: Signal<Signal<Output>> { executions.signal }

    /// Whether any execution is running: starts with the current state (false at first),
    /// sends only changes.
    public var executing: Signal<Bool> { executingSubject.signal.distinctUntilChanged() }

    /// The errors of executions, as values.
    public var errors: Signal<any Swift.Error> { errorsSubject.signal }

    /// Starts one execution and returns its (hot, replaying) signal. Fails with
    /// `Command.Error.notEnabled` if an execution runs and concurrency is not allowed.
    @discardableResult
    public func execute(_ input: Input) -> Signal<Output> {
        let allowed = running.withLock { running -> Bool in
            guard allowsConcurrentExecution || running == 0 else { return false }
            running += 1
            return true
        }
        guard allowed else { return .failure(Error.notEnabled) }
        executingSubject.send(true)

        let connection = work(input)
            .on(terminated: { [self] in finished() })
            .multicast(ReplaySubject())
        let errorsSubject = self.errorsSubject
        executions.send(
            connection.signal.catch { error in
                errorsSubject.send(error)
                return .empty
            })
        connection.connect()
        return connection.signal
    }

    private func finished() {
        let idle = running.withLock { running -> Bool in
            running -= 1
            return running == 0
        }
        if idle { executingSubject.send(false) }
    }
}
