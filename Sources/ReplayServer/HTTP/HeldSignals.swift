/// What a door's append handler keeps back from its channel while a POST it took is under
/// way, and hands on once it is answered (`InlineAppendState`, `FramedAppendState`).
///
/// Each is held for a reason of its own: a `read` so that a client sending behind an
/// unanswered POST is not read further (what it sent already waits); the end of the input
/// because hummingbird, or NIO's decoder, would end the connection before the answer; a
/// graceful shutdown's quiesce because hummingbird would see an idle connection and close it.
struct HeldSignals {
    var read = false
    var inputClosed = false
    var quiesce = false

    /// What was held, and nothing held from now on.
    mutating func release() -> HeldSignals {
        defer { self = HeldSignals() }
        return self
    }
}
