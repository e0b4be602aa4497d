#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a lock, reached only through `withLock { }`.
///
/// A pthread mutex rather than `Synchronization.Mutex`: on Linux, with Swift 6.3,
/// ThreadSanitizer does not see `Mutex`'s synchronization (its futex code is not
/// instrumented) and reports races on correctly locked code, while it intercepts pthread
/// mutexes. With this lock, `tools/sanitizers.sh` reports only real races.
///
/// ```swift
/// let counter = Locked(0)
/// counter.withLock { $0 += 1 }
/// print(counter.value)   // 1
/// ```
public final class Locked<Value>: @unchecked Sendable {  // the value is only touched with the mutex held
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// Behind a pointer rather than a stored `var`: the mutex already makes access
    /// exclusive, and a `var` of a class would add a dynamic exclusivity check to every
    /// `withLock` (a measurable cost on the writer's thread, which locks per event).
    private let storage: UnsafeMutablePointer<Value>

    public init(_ value: Value) {
        storage = UnsafeMutablePointer<Value>.allocate(capacity: 1)
        storage.initialize(to: value)
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with the lock held. Never call out to observers or user code from it.
    @discardableResult
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&storage.pointee)
    }

    /// A copy of the value, read under the lock.
    public var value: Value { withLock { $0 } }
}
