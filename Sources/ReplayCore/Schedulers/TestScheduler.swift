import Foundation
import ReplaySync

/// A scheduler on virtual time, for tests: nothing runs until the test advances the clock.
///
/// Actions are ordered by their due time, then by the order they were scheduled in. The
/// clock is set to an action's due time before it runs, and the scheduler never holds its
/// lock while an action runs, so actions may schedule more actions or read `now`.
///
/// ```swift
/// let scheduler = TestScheduler()
/// scheduler.after(2) { print("at", scheduler.elapsed) }
/// scheduler.after(1) { print("at", scheduler.elapsed) }
/// scheduler.advance(by: 5)   // prints "at 1.0", then "at 2.0"
/// ```
public final class TestScheduler: DateScheduler {
    private struct Item {
        let due: TimeInterval
        let order: UInt64
        let action: @Sendable () -> Void
        let cancelled: ActionDisposable
    }

    private struct State {
        var elapsed: TimeInterval = 0
        var items: [Item] = []  // sorted by (due, order)
        var nextOrder: UInt64 = 0

        mutating func insert(_ item: Item) {
            // Binary search for the first item due strictly later: equal times keep FIFO order.
            var low = 0, high = items.count
            while low < high {
                let mid = (low + high) / 2
                if items[mid].due <= item.due { low = mid + 1 } else { high = mid }
            }
            items.insert(item, at: low)
        }
    }

    private let state = Locked(State())
    private let epoch: Date

    /// - Parameter epoch: the `Date` that virtual time zero stands for.
    public init(epoch: Date = Date(timeIntervalSince1970: 0)) {
        self.epoch = epoch
    }

    /// Seconds of virtual time since the scheduler was made.
    public var elapsed: TimeInterval { state.withLock { $0.elapsed } }

    public var now: Date { epoch.addingTimeInterval(elapsed) }

    /// The number of actions waiting to run.
    public var pendingCount: Int { state.withLock { $0.items.count } }

    @discardableResult
    public func schedule(_ action: @escaping @Sendable () -> Void) -> any Disposable {
        after(0, action)
    }

    @discardableResult
    public func after(_ delay: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        enqueue(action) { elapsed in elapsed + max(0, delay) }
    }

    /// Schedules `action` at an absolute virtual time (seconds since the start); a time
    /// already past means "as soon as the clock is advanced".
    @discardableResult
    public func at(_ time: TimeInterval, _ action: @escaping @Sendable () -> Void) -> any Disposable {
        enqueue(action) { elapsed in max(elapsed, time) }
    }

    private func enqueue(
        _ action: @escaping @Sendable () -> Void,
        due: (TimeInterval) -> TimeInterval
    ) -> any Disposable {
        let cancelled = ActionDisposable {}
        state.withLock { state in
            let item = Item(due: due(state.elapsed), order: state.nextOrder, action: action, cancelled: cancelled)
            state.nextOrder += 1
            state.insert(item)
        }
        return cancelled
    }

    /// Runs, in order, every action due up to `elapsed + interval`, including actions
    /// scheduled by those actions, then leaves the clock at that time.
    public func advance(by interval: TimeInterval = 0) {
        advance(to: elapsed + interval)
    }

    /// Runs every action due up to `time` (seconds since the start).
    public func advance(to time: TimeInterval) {
        while let item = popItem(dueBy: time) {
            if !item.cancelled.isDisposed { item.action() }
        }
        state.withLock { $0.elapsed = max($0.elapsed, time) }
    }

    /// Runs actions until none is left, whatever their due time.
    public func run() {
        while let item = popItem(dueBy: .infinity) {
            if !item.cancelled.isDisposed { item.action() }
        }
    }

    private func popItem(dueBy time: TimeInterval) -> Item? {
        state.withLock { state in
            guard let first = state.items.first, first.due <= time else { return nil }
            state.items.removeFirst()
            state.elapsed = max(state.elapsed, first.due)
            return first
        }
    }
}
