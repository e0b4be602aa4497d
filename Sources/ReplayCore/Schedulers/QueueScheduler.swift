import Dispatch
import Foundation

/// Runs actions on a Dispatch queue (serial by default, so actions never overlap).
///
/// ```swift
/// let scheduler = QueueScheduler(label: "work")
/// scheduler.after(0.5) { print("half a second later") }
/// ```
public final class QueueScheduler: DateScheduler {
    public let queue: DispatchQueue

    public init(queue: DispatchQueue) {
        self.queue = queue
    }

    public convenience init(label: String = "replay.queue-scheduler", qos: DispatchQoS = .default) {
        self.init(queue: DispatchQueue(label: label, qos: qos))
    }

    public var now: Date { Date() }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable {
        let cancelled = ActionDisposable {}
        queue.async {
            if !cancelled.isDisposed { action() }
        }
        return cancelled
    }

    @discardableResult
    public func after(_ delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        let cancelled = ActionDisposable {}
        queue.asyncAfter(deadline: .now() + max(0, delay)) {
            if !cancelled.isDisposed { action() }
        }
        return cancelled
    }
}
