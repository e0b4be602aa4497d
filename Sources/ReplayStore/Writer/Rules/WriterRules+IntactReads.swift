import ReplayModel

extension WriterRules {
    /// Reads inside the writer's batch (a group's hand-out, a dead letter's copy, another
    /// daemon's events for the tail rings) up to the first corrupt event, which ends the
    /// read where it is rather than failing the batch: every request in it would fail,
    /// again at every retry. The reader outside the writer then meets the event itself,
    /// and gets its error.
    func forEachIntactEvent(_ segments: LogSegments, limit: Int, byteBudget: Int, _ body: EventVisitor) throws {
        do {
            try db.forEachEvent(segments, limit: limit, byteBudget: byteBudget, expiredBy: millis, body)
        } catch let error as StoreError {
            guard case .corruptEvent = error else { throw error }
            CorruptionReports.note(error)
        }
    }
}
