import ReplayCore
import ReplaySync
import ReplayTesting
import Testing

@Suite("AsyncSequence bridge")
struct AsyncBridgeTests {
    @Test func valuesIteratesASignalAndThrowsItsFailure() async throws {
        var seen: [Int] = []
        for try await value in Signal.sequence([1, 2, 3]).values { seen.append(value) }
        #expect(seen == [1, 2, 3])

        await #expect(throws: TestFailure.self) {
            for try await _ in Signal<Int>.failure(TestFailure("no")).values {}
        }
    }

    @Test func cancellingTheIterationDisposesTheSubscription() async {
        let disposed = Locked(false)
        let subject = Subject<Int>()
        let signal = subject.signal.on(terminated: { disposed.withLock { $0 = true } })
        let task = Task {
            for try await _ in signal.values {}
        }
        // Send until the iteration has subscribed, then cancel it.
        while !disposed.withLock({ $0 }) {
            subject.send(0)
            await Task.yield()
            task.cancel()
        }
        #expect(disposed.withLock { $0 })
    }

    @Test func signalFromAsyncSequenceIsColdAndDisposalCancels() async throws {
        let stream = AsyncStream<Int> { continuation in
            for n in 1...3 { continuation.yield(n) }
            continuation.finish()
        }
        var seen: [Int] = []
        for try await value in Signal(stream).values { seen.append(value) }
        #expect(seen == [1, 2, 3])

        let forever = AsyncStream<Int> { _ in }
        let ended = Locked<String?>(nil)
        let subscription = Signal(forever).subscribe(
            failed: { _ in ended.withLock { $0 = "failed" } },
            completed: { ended.withLock { $0 = "completed" } })
        subscription.dispose()
        #expect(ended.withLock { $0 } == nil, "disposal is silent: no terminal event")
    }
}
