import Synchronization

/// A value behind a lock that closures and tasks can share by reference.
public final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    public init(_ value: Value) {
        mutex = Mutex(value)
    }

    @discardableResult
    public func withLock<R: Sendable>(_ body: (inout Value) throws -> R) rethrows -> R {
        try mutex.withLock { try body(&$0) }
    }

    public var value: Value { mutex.withLock { $0 } }
}
