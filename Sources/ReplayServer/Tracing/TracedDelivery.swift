import ReplayStore

/// What a reader's traced events leave as spans when they are sent: a subscriber's
/// delivery, or a group member's hand-out (with its settle span begun). Checked per event
/// only with tracing on.
struct TracedDelivery: Sendable {
    let tracer: EventTracer
    let stream: String
    /// The group and member, for a member's hand-outs.
    var group: (name: String, member: String)? = nil

    /// One event, as a read hands it over (its trace context in the store's buffer).
    func delivered(_ sequence: UInt64, trace: UnsafeRawBufferPointer?) {
        guard let trace, tracer.isOn else { return }
        delivered(sequence, traceParent: String(decoding: trace, as: UTF8.self))
    }

    /// Events sent from the tail ring.
    func delivered(_ entries: [TailRing.Entry]) {
        guard tracer.isOn else { return }
        for entry in entries {
            if let trace = entry.traceParent { delivered(entry.sequence, traceParent: trace.text) }
        }
    }

    private func delivered(_ sequence: UInt64, traceParent: String) {
        if let group {
            tracer.handedOut(sequence, of: stream, group: group.name, member: group.member, traceParent: traceParent)
        } else {
            tracer.mark(.deliver, stream: stream, sequence: sequence, continuing: traceParent)
        }
    }
}

extension EventTracer {
    /// An HTTP response's traced events, sent.
    func delivered(_ annotated: [HTTPCursor.AnnotatedMessage], of stream: String) {
        guard isOn else { return }
        for message in annotated {
            if let trace = message.traceParent { mark(.deliver, stream: stream, sequence: message.sequence, continuing: trace) }
        }
    }
}
