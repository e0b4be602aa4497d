import ReplaySync

/// The in-memory `ReplayBuffer`: the last `capacity` values plus the terminal event.
///
/// Appends commit at once. `capacity: nil` keeps every value; `capacity: 0` keeps none
/// (only the terminal event), which makes a `ReplaySubject` behave as a plain `Subject`.
public final class RingBuffer<Value: Sendable>: ReplayBuffer {
    private struct State {
        var values = FIFO<ReplayEntry<Value>>()
        var terminal: ReplayEntry<Value>?
        var lastSequence: UInt64 = 0
    }

    /// The most values kept, or `nil` for no limit.
    public let capacity: Int?
    private let state = Locked(State())

    public init(capacity: Int?) {
        precondition(capacity.map { $0 >= 0 } ?? true, "capacity must not be negative")
        self.capacity = capacity
    }

    public var lastCommittedSequence: UInt64 { state.withLock { $0.lastSequence } }

    public func append(
        _ event: Event<Value>,
        completion: @escaping @Sendable (Result<ReplayEntry<Value>, any Error>) -> Void
    ) {
        let result = state.withLock { state -> Result<ReplayEntry<Value>, any Error> in
            guard state.terminal == nil else { return .failure(ReplayBufferError.terminated) }
            state.lastSequence += 1
            let entry = ReplayEntry(sequence: state.lastSequence, event: event)
            if event.isTerminal {
                state.terminal = entry
            } else if capacity != 0 {
                state.values.append(entry)
                if let capacity, state.values.count > capacity { _ = state.values.popFirst() }
            }
            return .success(entry)
        }
        completion(result)
    }

    public func read(from: UInt64, through: UInt64, limit: Int) throws -> [ReplayEntry<Value>] {
        state.withLock { state in
            var page: [ReplayEntry<Value>] = []
            if let first = state.values.first {
                // Sequence numbers are contiguous, so an index is a subtraction away.
                let start = Int(max(from, first.sequence) - first.sequence)
                var index = start
                while index < state.values.count, page.count < limit {
                    let entry = state.values[index]
                    if entry.sequence > through { break }
                    page.append(entry)
                    index += 1
                }
            }
            if let terminal = state.terminal, page.count < limit,
                terminal.sequence >= from, terminal.sequence <= through
            {
                page.append(terminal)
            }
            return page
        }
    }
}
