import Dispatch
import Foundation
import Logging
import ReplayCore
import ReplayStore

/// The stream as the subject a source is multicast into: values are appended to the store
/// (at most `maxInFlight` waiting for their commit; beyond that `send` blocks the source's
/// reading thread), and the source's end is handed to its supervisor.
final class StreamSink: SubjectProtocol {
    private let store: EventStore
    private let stream: String
    private let inFlight: DispatchSemaphore
    private let logger: Logger
    private let ended: @Sendable (Event<Data>) -> Void

    init(store: EventStore, stream: String, maxInFlight: Int = 1024, logger: Logger, ended: @escaping @Sendable (Event<Data>) -> Void) {
        self.store = store
        self.stream = stream
        self.inFlight = DispatchSemaphore(value: maxInFlight)
        self.logger = logger
        self.ended = ended
    }

    func send(_ event: Event<Data>) {
        guard case .value(let payload) = event else { return ended(event) }
        inFlight.wait()
        let (inFlight, logger, stream, ended) = (self.inFlight, self.logger, self.stream, self.ended)
        store.append(payload, to: stream) { result in
            inFlight.signal()
            if case .failure(let error) = result {
                logger.warning("source output not stored", metadata: ["stream": "\(stream)", "error": "\(error)"])
                if case .terminated = error { ended(.failed(error)) }
            }
        }
    }

    /// Subscribers read the stream from the store, not from here.
    var signal: Signal<Data> { .never }
}
