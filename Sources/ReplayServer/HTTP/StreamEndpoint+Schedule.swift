import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ReplayModel
import ReplayProtocol
import ReplayStore

/// A scheduled POST (`Replay-Delay` or `Replay-At`): its one event is checked as any
/// POST's (content type, a closed stream, a key's tombstone), stored at once, and appended
/// when it falls due. The answer is `202 Accepted`: stored, not yet in the stream.
extension StreamEndpoint {
    func schedule(_ stream: StreamRequest, _ request: Request, due: DueTime) async throws -> Response {
        let (name, headers) = (stream.name, stream.headers)
        // What is checked when an event is appended would be checked against a stream the
        // producer has not seen yet; a close is not an event.
        if try headers.producer() != nil || headers.writerSequence != nil || headers.closes {
            throw HTTPProblem.invalid(
                "a scheduled POST (Replay-Delay, Replay-At) takes Replay-Key and traceparent, not Producer-*, Stream-Seq or Stream-Closed")
        }
        let info = try await hub(name).info
        let write = try appendWrite(name, headers: headers, producer: nil, body: try await body(of: request), info: info)
        guard write.payloads.count == 1, let payload = write.payloads.first else {
            throw HTTPProblem.invalid("a scheduled POST carries one event (a JSON stream: one value, or an array of one)")
        }
        let event = try await withStoreErrors { () async throws(StoreError) in
            try await store.schedule(payload, to: name, at: due, key: write.key, traceParent: write.traceParent, ttl: write.ttl)
        }
        let description = ScheduledDescription(event, withPayload: false)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var fields = HTTPFields()
        fields[.replayScheduledID] = String(event.id)
        fields[.replayDue] = description.due
        fields[.contentType] = "application/json"
        fields[.cacheControl] = "no-store"
        return Response(status: .accepted, headers: fields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(description))))
    }
}
