extension Signal {
    /// Runs the subscription (the signal's work) on `scheduler`.
    public func subscribe(on scheduler: any Scheduler) -> Signal {
        Signal { observer in
            let subscription = SerialDisposable()
            let scheduled = scheduler.schedule { subscription.inner = self.subscribe(observer) }
            return CompositeDisposable([scheduled, subscription])
        }
    }
}
