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

    /// Waits while `keepWaiting` holds, with the lock released between looks, until
    /// `condition` is signalled and `keepWaiting` no longer holds, or `nanoseconds` have
    /// passed. Whoever changes what `keepWaiting` reads does so in `withLock`, then signals.
    public func wait(for condition: LockCondition, while keepWaiting: (Value) -> Bool, atMost nanoseconds: UInt64) {
        var deadline = timespec()
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        let end = UInt64(deadline.tv_nsec) + nanoseconds
        deadline.tv_sec += Int(end / 1_000_000_000)
        deadline.tv_nsec = Int(end % 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while keepWaiting(storage.pointee) {
            guard condition.wait(on: mutex, until: &deadline) else { return }
        }
    }
}

/// What a thread waits on with a `Locked`'s lock released (`Locked.wait(for:while:atMost:)`)
/// until another signals it. Its deadlines are on the monotonic clock, so a wait's limit
/// does not move when the wall clock is set.
public final class LockCondition: @unchecked Sendable {  // a pthread condition is made to be shared by threads
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if canImport(Glibc)
            pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deinitialize(count: 1)
        condition.deallocate()
    }

    /// Wakes one thread waiting on it.
    public func signal() {
        pthread_cond_signal(condition)
    }

    /// Waits (`mutex` held on entry and on return) until signalled or `deadline`; `false`
    /// once the deadline has passed.
    fileprivate func wait(on mutex: UnsafeMutablePointer<pthread_mutex_t>, until deadline: inout timespec) -> Bool {
        #if canImport(Glibc)
            return pthread_cond_timedwait(condition, mutex, &deadline) != ETIMEDOUT
        #else
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let left = (deadline.tv_sec - now.tv_sec) * 1_000_000_000 + (deadline.tv_nsec - now.tv_nsec)
            guard left > 0 else { return false }
            var relative = timespec(tv_sec: left / 1_000_000_000, tv_nsec: left % 1_000_000_000)
            return pthread_cond_timedwait_relative_np(condition, mutex, &relative) != ETIMEDOUT
        #endif
    }
}
