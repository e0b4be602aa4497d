import ReplayModel
import ReplayProtocol
import ReplayStore
import Tracing

/// A traced publish's span, from the command received to its commit: it stands in for
/// the connection's sink, ends its spans with what the writer answered, and hands the
/// answers on. Only traced publishes take it, and only with tracing on; the others go
/// straight to the connection's sink, told once per batch.
final class PublishSpans: AppendSink {
    private let inner: any AppendSink
    /// One per traced event, in the order of the answer's sequence numbers (an atomic
    /// send's events; `nil` for its untraced ones).
    private let spans: [(any Span)?]

    init(inner: any AppendSink, spans: [(any Span)?]) {
        self.inner = inner
        self.spans = spans
    }

    func appended(_ results: [AppendResult]) {
        for result in results {
            switch result.sequence {
            case .success(let first):
                for (span, sequence) in zip(spans, [first] + result.more) {
                    span?.attributes["messaging.message.id"] = "\(sequence)"
                    span?.end()
                }
            case .failure(let error):
                for span in spans {
                    span?.recordError(error)
                    span?.setStatus(SpanStatus(code: .error, message: "\(error)"))
                    span?.end()
                }
            }
        }
        inner.appended(results)
    }
}

extension EventTracer {
    /// The sink a publish's answer goes to: `sink` itself unless the publish is traced and
    /// tracing is on.
    func sink(for command: ClientCommand, _ sink: any AppendSink) -> any AppendSink {
        guard isOn else { return sink }
        let spans: [(any Span)?]
        switch command {
        case .publishChecked(let stream, _, let checks):
            spans = [start(.publish, stream: stream, continuing: checks.traceParent?.text)]
        case .atomic(let events):
            spans = events.map { start(.publish, stream: $0.stream, continuing: $0.traceParent?.text) }
        default:
            return sink
        }
        guard spans.contains(where: { $0 != nil }) else { return sink }
        return PublishSpans(inner: sink, spans: spans)
    }

    /// An HTTP write's span, ended by `completion`'s answer; `completion` itself when the
    /// write is untraced or tracing is off.
    func completion(
        for write: StreamWrite, _ completion: @escaping @Sendable (Result<StreamWriteOutcome, StoreError>) -> Void
    ) -> @Sendable (Result<StreamWriteOutcome, StoreError>) -> Void {
        guard let span = start(.publish, stream: write.stream, continuing: write.traceParent?.text) else { return completion }
        span.attributes["messaging.batch.message_count"] = write.payloads.count
        return { result in
            switch result {
            case .success(.appended(let info)), .success(.created(let info)):
                span.attributes["messaging.message.id"] = "\(info.lastSequence)"
            case .failure(let error):
                span.recordError(error)
                span.setStatus(SpanStatus(code: .error, message: "\(error)"))
            default:
                break
            }
            span.end()
            completion(result)
        }
    }
}

extension EventStore {
    /// `write`, with its publish span when it is traced (see `EventTracer`).
    func write(_ write: StreamWrite, tracer: EventTracer, completion: @escaping @Sendable (Result<StreamWriteOutcome, StoreError>) -> Void) {
        self.write(write, completion: tracer.completion(for: write, completion))
    }

    /// `write`, awaited, with its publish span when it is traced.
    func write(_ write: StreamWrite, tracer: EventTracer) async throws(StoreError) -> StreamWriteOutcome {
        guard tracer.isOn, write.traceParent != nil else { return try await self.write(write) }
        let result = await withCheckedContinuation { continuation in
            self.write(write, tracer: tracer) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }
}
