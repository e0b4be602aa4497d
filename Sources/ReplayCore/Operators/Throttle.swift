import Foundation
import ReplaySync

extension Signal {
    /// Sends a value only after `interval` seconds passed without a newer one (the
    /// articles' `throttle:`, which other libraries call debounce). On completion the
    /// pending value, if any, is sent first.
    ///
    /// ```swift
    /// text.throttle(interval: 0.3, on: scheduler).flatMap(search)   // search once typing pauses
    /// ```
    public func throttle(interval: TimeInterval, on scheduler: any DateScheduler) -> Signal {
        Signal { observer in
            let output = SerialDelivery(observer)
            let pending = Locked<Value?>(nil)
            let timer = SerialDisposable()
            let subscription = self.subscribe(events: { event in
                switch event {
                case .value(let value):
                    pending.withLock { $0 = value }
                    timer.inner = scheduler.after(interval) {
                        if let value = pending.withLock({ $0.take() }) { output.send(.value(value)) }
                    }
                case .completed:
                    timer.inner = nil
                    if let value = pending.withLock({ $0.take() }) { output.send(.value(value)) }
                    output.send(.completed)
                case .failed:
                    timer.inner = nil
                    output.send(event)
                }
            })
            return CompositeDisposable([subscription, timer])
        }
    }
}
