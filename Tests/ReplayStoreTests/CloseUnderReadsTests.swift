import Dispatch
import Foundation
import ReplayStore
import ReplaySync
import ReplayTesting
import Testing

/// Closing a store while other threads read it: each read either completes or is refused
/// with an error; none reaches SQLite through a connection the close already freed (which
/// crashed the process with SIGSEGV inside sqlite3).
@Suite("A store closed under reads", .timeLimit(.minutes(2)))
struct CloseUnderReadsTests {
    @Test func readsRacingTheCloseCompleteOrAreRefused() async throws {
        try await withTemporaryDirectory { directory in
            for round in 0..<20 {
                let store = try EventStore(path: directory + "/replay-\(round).sqlite", options: .init(autoCreate: .unlimited))
                for n in 1...50 { _ = try await store.append(Data(#"{"n":\#(n)}"#.utf8), to: "s") }
                let outcomes = Locked<(read: Int, refused: Int)>((0, 0))
                let readers = DispatchGroup()
                for _ in 0..<4 {
                    readers.enter()
                    Thread.detachNewThread {
                        defer { readers.leave() }
                        // Reads until the close refuses one.
                        while true {
                            do {
                                let events = try store.read("s", from: 1, limit: 50)
                                #expect(events.count == 50)
                                outcomes.withLock { $0.read += 1 }
                            } catch {
                                outcomes.withLock { $0.refused += 1 }
                                return
                            }
                        }
                    }
                }
                while outcomes.withLock({ $0.read }) < 8 { await Task.yield() }
                store.close()
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in readers.notify(queue: .global()) { done.resume() } }
                #expect(outcomes.withLock { $0.refused } == 4)
            }
        }
    }
}
