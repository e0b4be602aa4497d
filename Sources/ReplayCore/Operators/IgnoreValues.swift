extension Signal {
    /// Drops every value and keeps only the terminal event.
    public func ignoreValues() -> Signal {
        filter { _ in false }
    }
}
