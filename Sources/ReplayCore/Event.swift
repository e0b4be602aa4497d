/// One thing a signal sends: a value, or one of the two terminal events.
///
/// A signal sends any number of values, then at most one terminal event
/// (`completed` or `failed`). Nothing follows a terminal event.
public enum Event<Value: Sendable>: Sendable {
    case value(Value)
    case failed(any Error)
    case completed

    /// `true` for `completed` and `failed`: the events after which nothing is sent.
    public var isTerminal: Bool {
        switch self {
        case .value: false
        case .failed, .completed: true
        }
    }

    /// The value, if this is a value event.
    public var value: Value? {
        if case .value(let value) = self { return value }
        return nil
    }

    /// Transforms the value of a value event; terminal events pass through.
    public func map<U: Sendable>(_ transform: (Value) throws -> U) rethrows -> Event<U> {
        switch self {
        case .value(let value): .value(try transform(value))
        case .failed(let error): .failed(error)
        case .completed: .completed
        }
    }
}

extension Event: CustomStringConvertible {
    public var description: String {
        switch self {
        case .value(let value): "value(\(value))"
        case .failed(let error): "failed(\(error))"
        case .completed: "completed"
        }
    }
}
