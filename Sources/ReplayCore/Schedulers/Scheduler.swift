import Foundation

/// Runs actions: now, on a queue, or on virtual time.
public protocol Scheduler: Sendable {
    /// Schedules `action` to run as soon as the scheduler allows. Disposing the result
    /// before it ran cancels it.
    @discardableResult
    func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable
}

/// A scheduler that knows the time and can run actions later.
public protocol DateScheduler: Scheduler {
    /// The scheduler's current time.
    var now: Date { get }

    /// Schedules `action` to run `delay` seconds from now.
    @discardableResult
    func after(_ delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Disposable
}

/// Runs every action at once, on the calling thread.
public struct ImmediateScheduler: Scheduler {
    public init() {}

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable {
        action()
        return Disposables.empty
    }
}
