import Foundation

extension Signal {
    /// Delivers every event on `scheduler`, in order.
    public func deliver(on scheduler: any Scheduler) -> Signal {
        Signal { observer in
            let disposables = CompositeDisposable()
            disposables.add(self.subscribe(events: { event in
                disposables.add(scheduler.schedule { observer.send(event) })
            }))
            return disposables
        }
    }

    /// Runs the subscription (the signal's work) on `scheduler`.
    public func subscribe(on scheduler: any Scheduler) -> Signal {
        Signal { observer in
            let subscription = SerialDisposable()
            let scheduled = scheduler.schedule { subscription.inner = self.subscribe(observer) }
            return CompositeDisposable([scheduled, subscription])
        }
    }

    /// Delays values and completion by `interval` seconds on `scheduler`; a failure is
    /// sent at once.
    public func delay(_ interval: TimeInterval, on scheduler: any DateScheduler) -> Signal {
        Signal { observer in
            let disposables = CompositeDisposable()
            disposables.add(self.subscribe(events: { event in
                if case .failed = event { return observer.send(event) }
                disposables.add(scheduler.after(interval) { observer.send(event) })
            }))
            return disposables
        }
    }
}
