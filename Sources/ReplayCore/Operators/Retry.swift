import Foundation
import ReplaySync

extension Signal {
    /// On failure, subscribes again (runs the work again) after `delay(attempt)` seconds on
    /// `scheduler`, up to `maxRetries` times; the failure after the last retry goes through.
    ///
    /// ```swift
    /// flakyRequest.retry(upTo: 3, delay: { attempt in pow(2, Double(attempt)) }, on: scheduler)
    /// ```
    public func retry(
        upTo maxRetries: Int, delay: @escaping @Sendable (_ attempt: Int) -> TimeInterval,
        on scheduler: any DateScheduler
    ) -> Signal {
        Signal { observer in
            // Separate slots: a run that fails synchronously schedules its retry before
            // its own subscription is stored, and must not replace (cancel) it.
            let run = SerialDisposable()
            let timer = SerialDisposable()
            let attempts = Locked(0)
            @Sendable func start() {
                run.inner = self.subscribe(events: { event in
                    guard case .failed = event else { return observer.send(event) }
                    let attempt = attempts.withLock {
                        $0 += 1; return $0
                    }
                    guard attempt <= maxRetries else { return observer.send(event) }
                    timer.inner = scheduler.after(delay(attempt)) { start() }
                })
            }
            start()
            return CompositeDisposable([run, timer])
        }
    }
}
