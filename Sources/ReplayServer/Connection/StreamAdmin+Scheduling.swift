import Foundation
import ReplayModel
import ReplayProtocol
import ReplayStore

/// Scheduled events on the socket: a PUB with `delay=` or `at=`, and `SCHEDULED`.
extension StreamAdmin {
    /// Stores the event to append when it falls due; answers its id and due time.
    func schedule(
        _ payload: Data, to stream: String, at due: DueTime, _ annotations: AppendConditions, reply: @escaping @Sendable (ServerFrame) -> Void
    ) {
        store.schedule(payload, to: stream, at: due, key: annotations.key, traceParent: annotations.traceParent, ttl: annotations.ttl) { [self] result in
            switch result {
            case .success(let event): reply(json(ScheduledDescription(event, withPayload: false), ServerFrame.info))
            case .failure(let error): reply(.error(ReplayError(error)))
            }
        }
    }

    /// The stream's first `limit` pending events, with their payloads, up to the listing's
    /// byte budget (one event at least). On the read pool.
    func listScheduled(_ stream: String, limit: Int) throws -> ServerFrame {
        let events = try store.scheduled(stream, limit: limit)
        var bytes = 0
        let listed = events.prefix { event in
            defer { bytes += event.payload.count }
            return bytes == 0 || bytes + event.payload.count <= ProtocolLimits.maxScheduledListedBytes
        }
        return json(listed.map { ScheduledDescription($0, withPayload: true) }, ServerFrame.list)
    }
}
