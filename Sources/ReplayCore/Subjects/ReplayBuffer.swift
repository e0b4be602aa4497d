/// One event held by a replay buffer, with the sequence number the buffer gave it.
public struct ReplayEntry<Value: Sendable>: Sendable {
    /// Per-buffer sequence number: starts at 1, contiguous, never reused.
    public let sequence: UInt64
    public let event: Event<Value>

    public init(sequence: UInt64, event: Event<Value>) {
        self.sequence = sequence
        self.event = event
    }
}

/// Errors a replay buffer reports for an append.
public enum ReplayBufferError: Error, Equatable, CustomStringConvertible {
    /// The buffer holds a terminal event; nothing may follow it.
    case terminated

    public var description: String {
        switch self {
        case .terminated: "the stream has terminated (completed or failed); nothing can be appended after its terminal event"
        }
    }
}

/// Where a `ReplaySubject` keeps what it replays to late subscribers.
///
/// The seam between the in-memory core and durable storage. A buffer assigns sequence
/// numbers and decides when an event is *committed* (held for good); the subject delivers
/// an event to live subscribers only after that, so nothing a subscriber saw can vanish.
/// An in-memory buffer commits at once; a store commits after its transaction, later and
/// on another thread.
///
/// Contract:
/// - `append` gives each event the next sequence number, and calls `completion` exactly
///   once: with the entry when committed, or with an error (then no number was used).
///   Completions may come on any thread, in any order; the subject reorders them.
///   `completion` must not be called while holding a lock that `read` takes.
/// - After a terminal event, `append` fails with `ReplayBufferError.terminated`.
/// - The buffer trims itself to its capacity: `read` returns at most the last `capacity`
///   values, then the terminal event if there is one.
public protocol ReplayBuffer<Value>: AnyObject, Sendable {
    associatedtype Value: Sendable

    /// The highest committed sequence number (0 when nothing was ever appended).
    var lastCommittedSequence: UInt64 { get }

    /// Appends an event; see the contract above.
    func append(
        _ event: Event<Value>,
        completion: @escaping @Sendable (Result<ReplayEntry<Value>, any Error>) -> Void
    )

    /// Up to `limit` retained, committed entries with `from <= sequence <= through`,
    /// oldest first. Entries trimmed away are simply absent.
    func read(from: UInt64, through: UInt64, limit: Int) throws -> [ReplayEntry<Value>]
}
