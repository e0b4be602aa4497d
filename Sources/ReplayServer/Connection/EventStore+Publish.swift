import Foundation
import ReplayProtocol
import ReplayStore

extension EventStore {
    /// Hands a PUB (checked or not) or an ATOMIC to the writer, its result told to `sink`
    /// under `token`; `false`, and nothing done, for any other command. A traced publish
    /// gets its span from `tracer` (a plain PUB carries no trace context: it never looks).
    func submitPublish(_ command: ClientCommand, sink: any AppendSink, token: UInt64, tracer: EventTracer = .off) -> Bool {
        switch command {
        case .publish(let stream, let payload):
            append(payload.readableData, to: stream, sink: sink, token: token)
        case .publishChecked(let stream, let payload, let checks):
            append(payload.readableData, to: stream, conditions: checks, sink: tracer.sink(for: command, sink), token: token)
        case .atomic(let events):
            appendAtomically(events.map(\.append), sink: tracer.sink(for: command, sink), token: token)
        default:
            return false
        }
        return true
    }
}

extension AtomicEvent {
    var append: AtomicAppend {
        AtomicAppend(stream: stream, payload: payload.readableData, expectedLastSequence: expect, traceParent: traceParent, key: key, ttl: ttl)
    }
}
