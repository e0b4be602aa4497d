import NIOCore
import ReplayStore
import ReplaySync

/// The way back from the store's writer to a connection that handed it a POST's write: the
/// writer's thread leaves the answer here and wakes the connection's event loop, which
/// takes it. Made once for a connection, with its completion, at its first write: a
/// closure made for each POST (over the handler, the write, then the answer) was two
/// allocations, and a connection that never posts (an SSE reader's, held for hours) does
/// not carry the answer's room (about 500 bytes).
final class StoreAnswerHop: Sendable {
    private let slot = Locked<Result<StreamWriteOutcome, StoreError>?>(nil)

    /// What the store calls with its answer, on its writer's thread: `answered` then runs
    /// on `eventLoop`, to `take` it. The completion holds what `answered` holds (the
    /// connection's handler), which holds the completion: the handler lets go of it when it
    /// leaves its pipeline (and keeps this, so that a write still in the store's hands is
    /// still answered, and counted off).
    func completion(
        on eventLoop: any EventLoop, answered: @escaping @Sendable () -> Void
    ) -> @Sendable (Result<StreamWriteOutcome, StoreError>) -> Void {
        let slot = slot
        return { result in
            slot.withLock { $0 = result }
            eventLoop.execute(answered)
        }
    }

    /// A hop and its completion for a connection's `handler`: `answered` runs with it on
    /// `eventLoop`, its loop.
    static func make<Handler: AnyObject>(
        for handler: Handler, on eventLoop: any EventLoop, answered: @escaping @Sendable (Handler) -> Void
    ) -> (StoreAnswerHop, @Sendable (Result<StreamWriteOutcome, StoreError>) -> Void) {
        let hop = StoreAnswerHop()
        let bound = NIOLoopBound(handler, eventLoop: eventLoop)
        return (hop, hop.completion(on: eventLoop) { answered(bound.value) })
    }

    /// The answer the store left, if any (once).
    func take() -> Result<StreamWriteOutcome, StoreError>? {
        slot.withLock { $0.take() }
    }
}
