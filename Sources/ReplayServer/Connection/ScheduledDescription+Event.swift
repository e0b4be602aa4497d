import ReplayModel
import ReplayProtocol
import ReplayStore

extension ScheduledDescription {
    /// A stored scheduled event as both doors describe it; its payload only in a listing
    /// (a PUB's reply does not repeat what was sent).
    init(_ event: ScheduledEvent, withPayload: Bool) {
        self.init(
            id: event.id, stream: event.stream, due: Timestamp.format(millis: event.due), created: Timestamp.format(millis: event.created),
            key: event.key?.text, payload: withPayload ? event.payload : nil)
    }
}
