import Dispatch
import Foundation
import ReplaySync

@testable import ReplayStore

/// What the write queue's tests watch its batches with: each commit recorded as the numbers
/// of its requests (the first byte of each one's payload), the first held open until
/// `release()` so that the requests submitted meanwhile queue up behind it.
final class HeldCommits: Sendable {
    private let recorded = Locked<[[Int]]>([])
    private let started = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)

    /// The queue's commit: records `batch`; the first waits for `release()`.
    func commit(_ batch: [WriteRequest]) {
        let numbers = batch.map(Self.number)
        let first = recorded.withLock { recorded in
            recorded.append(numbers)
            return recorded.count == 1
        }
        if first {
            started.signal()
            gate.wait()
        }
    }

    /// Returns once the first commit has started (and is held).
    func untilFirstStarted() { started.wait() }

    func release() { gate.signal() }

    var batches: [[Int]] { recorded.withLock { $0 } }

    private static func number(_ request: WriteRequest) -> Int {
        switch request {
        case .streamWrite(let write, _): Int(write.payloads[0][0])
        case .appendWithCompletion(_, let payload, _): Int(payload[0])
        default: -1
        }
    }
}
