import ReplayModel
import ReplaySync
import Tracing

/// The daemon's spans (`--otlp-endpoint`), one per thing done with a traced event, each a
/// child of the trace context its publisher gave: publish (received to committed), deliver
/// (to a subscriber or an HTTP reader), hand-out and settle (a group's), and a webhook's
/// delivery. An untraced event gets none, and with tracing off (`tracer` nil) every call
/// is one nil check: an untraced daemon pays nothing per event.
///
/// The names and attributes are OpenTelemetry's messaging conventions: `<operation>
/// <stream>`, `messaging.system` "replay", `messaging.destination.name`, and the
/// operation's name and type.
struct EventTracer: Sendable {
    let tracer: (any Tracer)?
    /// Traced events handed to group members and not yet settled: a settle span runs
    /// from the hand-out to the member's answer.
    let handouts: HandoutTraces?

    init(tracer: (any Tracer)?) {
        self.tracer = tracer
        handouts = tracer == nil ? nil : HandoutTraces()
    }

    static let off = EventTracer(tracer: nil)

    var isOn: Bool { tracer != nil }

    /// What the daemon does with an event, as the messaging conventions name it.
    enum Operation: String, Sendable {
        case publish, deliver
        /// A consumer group hands the event to a member.
        case handOut = "hand_out"
        /// A group's member acknowledges it (or gives it back).
        case settle
        /// A subscription's webhook is told that work is waiting.
        case webhook

        var type: String {
            switch self {
            case .publish: "send"
            case .deliver, .handOut: "receive"
            case .settle: "settle"
            case .webhook: "process"
            }
        }

        var kind: SpanKind {
            switch self {
            case .publish, .settle: .server
            case .deliver, .handOut: .producer
            case .webhook: .client
            }
        }
    }

    /// A span continuing `traceParent`, started `at` (now by default); `nil` when tracing
    /// is off or the event is untraced.
    func start(
        _ operation: Operation, stream: String, continuing traceParent: String?, at start: DefaultTracerClock.Instant = DefaultTracerClock.now
    ) -> (any Span)? {
        guard let tracer, let traceParent else { return nil }
        var context = ServiceContext.topLevel
        tracer.extract(["traceparent": traceParent], into: &context, using: HeaderCarrier())
        let span = tracer.startSpan("\(operation.rawValue) \(stream)", context: context, ofKind: operation.kind, at: start)
        span.attributes["messaging.system"] = "replay"
        span.attributes["messaging.destination.name"] = stream
        span.attributes["messaging.operation.name"] = operation.rawValue
        span.attributes["messaging.operation.type"] = operation.type
        return span
    }

    /// A span of no length: something done with the event at one moment (a delivery).
    func mark(_ operation: Operation, stream: String, sequence: UInt64, continuing traceParent: String, _ attributes: [String: String] = [:]) {
        guard let span = start(operation, stream: stream, continuing: traceParent) else { return }
        span.attributes["messaging.message.id"] = "\(sequence)"
        for (key, value) in attributes { span.attributes[key] = value }
        span.end()
    }

    /// The W3C trace context of `span`, to send on (a webhook's `traceparent` header).
    func traceParent(of span: any Span) -> String? {
        var headers: [String: String] = [:]
        tracer?.inject(span.context, into: &headers, using: HeaderCarrier())
        return headers["traceparent"]
    }
}

extension EventTracer {
    /// A traced event handed to a group's member: its hand-out span, and the start of its
    /// settle span, which the member's answer ends (`settled`).
    func handedOut(_ sequence: UInt64, of stream: String, group: String, member: String, traceParent: String) {
        guard let handouts else { return }
        mark(.handOut, stream: stream, sequence: sequence, continuing: traceParent, ["messaging.consumer.group.name": group])
        handouts.add(HandoutTraces.Key(stream: stream, group: group, member: member, sequence: sequence), traceParent)
    }

    /// A member's ACK (or NACK, `acknowledged` false) of an event it was handed: the settle
    /// span, from the hand-out to now, if the event was traced.
    func settled(_ sequence: UInt64, of stream: String, group: String, member: String, acknowledged: Bool) {
        guard let handouts, let (traceParent, handedOut) = handouts.take(.init(stream: stream, group: group, member: member, sequence: sequence)),
            let span = start(.settle, stream: stream, continuing: traceParent, at: handedOut)
        else { return }
        span.attributes["messaging.message.id"] = "\(sequence)"
        span.attributes["messaging.consumer.group.name"] = group
        span.attributes["replay.settle"] = acknowledged ? "ack" : "nack"
        span.end()
    }
}

/// The traced events members hold, until they answer; at most `limit` (a member that
/// leaves without answering leaves its entries: past the limit new ones are not kept, and
/// their settle spans are not made).
final class HandoutTraces: Sendable {
    struct Key: Hashable, Sendable {
        let stream: String
        let group: String
        let member: String
        let sequence: UInt64
    }

    static let limit = 65_536
    private let held = Locked<[Key: (String, DefaultTracerClock.Instant)]>([:])

    func add(_ key: Key, _ traceParent: String) {
        held.withLock { held in
            guard held.count < Self.limit else { return }
            held[key] = (traceParent, DefaultTracerClock.now)
        }
    }

    func take(_ key: Key) -> (String, DefaultTracerClock.Instant)? {
        held.withLock { $0.removeValue(forKey: key) }
    }
}

/// Trace context as headers: what the W3C propagator reads and writes.
struct HeaderCarrier: Extractor, Injector {
    func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) { carrier[key] = value }
}
