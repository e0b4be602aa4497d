import ReplayCore
import ReplaySync
import Testing

@Suite("Disposables")
struct DisposableTests {
    @Test func actionDisposableRunsOnceEvenUnderConcurrentDisposal() async {
        let runs = Locked(0)
        let disposable = ActionDisposable { runs.withLock { $0 += 1 } }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<16 { group.addTask { disposable.dispose() } }
        }
        #expect(runs.withLock { $0 } == 1)
        #expect(disposable.isDisposed)
    }

    @Test func compositeDisposesMembersOnceAndLateAdditionsAtOnce() {
        let log = Locked<[String]>([])
        let composite = CompositeDisposable()
        composite.add { log.withLock { $0.append("a") } }
        let token = composite.add { log.withLock { $0.append("removed") } }
        composite.add { log.withLock { $0.append("b") } }
        composite.remove(token!)
        composite.dispose()
        composite.dispose()
        #expect(composite.add { log.withLock { $0.append("late") } } == nil)
        #expect(log.withLock { $0 } == ["a", "b", "late"])
    }

    @Test func serialDisposesThePreviousInnerAndAnyInnerSetAfterDisposal() {
        let log = Locked<[String]>([])
        let serial = SerialDisposable()
        serial.inner = Disposables.action { log.withLock { $0.append("first") } }
        serial.inner = Disposables.action { log.withLock { $0.append("second") } }
        #expect(log.withLock { $0 } == ["first"])
        serial.dispose()
        serial.inner = Disposables.action { log.withLock { $0.append("third") } }
        #expect(log.withLock { $0 } == ["first", "second", "third"])
    }
}
