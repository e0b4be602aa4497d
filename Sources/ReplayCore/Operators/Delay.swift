import Foundation

extension Signal {
    /// Delays values and completion by `interval` seconds on `scheduler`; a failure is
    /// sent at once.
    public func delay(_ interval: TimeInterval, on scheduler: any DateScheduler) -> Signal {
        Signal { observer in
            let disposables = CompositeDisposable()
            disposables.add(
                self.subscribe(events: { event in
                    if case .failed = event { return observer.send(event) }
                    disposables.add(scheduler.after(interval) { observer.send(event) })
                }))
            return disposables
        }
    }
}
