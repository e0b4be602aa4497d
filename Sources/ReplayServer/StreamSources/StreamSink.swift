import DequeModule
import Foundation
import Logging
import ReplayCore
import ReplayStore
import ReplaySync

/// The stream as the subject a source is multicast into: values are appended to the store,
/// and the source's end is handed to its supervisor.
///
/// At most `maxInFlight` appends wait for their commit: `admit()` suspends the source's
/// reader beyond that, so the pipe fills and the command blocks on its own writes. (A
/// counting window written here: a suspension, not a blocked thread, and no package in
/// use has an async semaphore.)
final class StreamSink: SubjectProtocol, Sendable {
    private struct Window {
        var inFlight = 0
        var waiting = Deque<CheckedContinuation<Void, Never>>()
    }

    private let store: EventStore
    private let stream: String
    private let maxInFlight: Int
    private let window = Locked(Window())
    private let logger: Logger
    private let ended: @Sendable (Event<Data>) -> Void

    init(store: EventStore, stream: String, maxInFlight: Int = 1024, logger: Logger, ended: @escaping @Sendable (Event<Data>) -> Void) {
        self.store = store
        self.stream = stream
        self.maxInFlight = maxInFlight
        self.logger = logger
        self.ended = ended
    }

    /// Returns once one more append may be in flight.
    func admit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = window.withLock { window -> Bool in
                guard window.inFlight >= maxInFlight else { return true }
                window.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    func send(_ event: Event<Data>) {
        guard case .value(let payload) = event else { return ended(event) }
        window.withLock { $0.inFlight += 1 }
        let (logger, stream, ended) = (self.logger, self.stream, self.ended)
        store.append(payload, to: stream) { [self] result in
            release()
            if case .failure(let error) = result {
                logger.warning("source output not stored", metadata: ["stream": "\(stream)", "error": "\(error)"])
                if case .terminated = error { ended(.failed(error)) }
            }
        }
    }

    private func release() {
        let next = window.withLock { window -> CheckedContinuation<Void, Never>? in
            window.inFlight -= 1
            return window.inFlight < maxInFlight ? window.waiting.popFirst() : nil
        }
        next?.resume()
    }

    /// Subscribers read the stream from the store, not from here.
    var signal: Signal<Data> { .never }
}
