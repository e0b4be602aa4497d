extension Signal {
    /// Sends `value` after `delay` seconds on `scheduler`, then completes.
    public static func after(_ delay: Double, on scheduler: any DateScheduler, value: Value) -> Signal {
        Signal { observer in
            scheduler.after(delay) {
                observer.send(value)
                observer.sendCompleted()
            }
        }
    }
}
