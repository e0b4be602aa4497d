extension Signal {
    /// Delivers every event on `scheduler`, in order.
    public func deliver(on scheduler: any Scheduler) -> Signal {
        Signal { observer in
            let disposables = CompositeDisposable()
            disposables.add(
                self.subscribe(events: { event in
                    disposables.add(scheduler.schedule { observer.send(event) })
                }))
            return disposables
        }
    }
}
