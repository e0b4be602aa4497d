import Dispatch
import ReplayCore
import ReplaySync
import ReplayTesting
import Testing

@Suite("ReplaySubject")
struct ReplaySubjectTests {
    let conformance = ReplaySubjectConformance { RingBuffer(capacity: $0) }

    @Test func terminalEventIsReplayedAfterValues() async throws {
        try await conformance.terminalEventIsReplayedAfterValues()
    }

    @Test(arguments: [1, 2, 3, 4, 5] as [UInt64])
    func randomSubscriptionPointsReceiveTheRightSuffix(seed: UInt64) async throws {
        try await conformance.randomSubscriptionPointsReceiveTheRightSuffix(seed: seed, rounds: 200)
    }

    @Test func capacityZeroBehavesAsAPlainSubject() {
        let subject = ReplaySubject<Int>(capacity: 0)
        subject.send(1)
        let received = Locked<[Int]>([])
        subject.subscribe(next: { v in received.withLock { $0.append(v) } })
        subject.send(2)
        #expect(received.withLock { $0 } == [2])
    }

    @Test func sendCompletionReportsSequenceNumbersAndRefusalAfterTheEnd() {
        let subject = ReplaySubject<String>(capacity: 2)
        let results = Locked<[String]>([])
        for event in [Event<String>.value("a"), .value("b"), .completed, .value("late")] {
            subject.send(event) { result in
                let line =
                    switch result {
                    case .success(let entry): "\(entry.sequence)"
                    case .failure(let error): "\(error)"
                    }
                results.withLock { $0.append(line) }
            }
        }
        #expect(results.withLock { $0 } == ["1", "2", "3", "\(ReplayBufferError.terminated)"])
    }

    /// An observer that sends into the subject it observes does not deadlock, and its
    /// event is delivered after the one being delivered, to everyone, in order.
    @Test func reentrantSendFromAnObserverIsQueuedNotDeadlocked() {
        let subject = ReplaySubject<Int>(capacity: nil)
        let first = Locked<[Int]>([])
        let second = Locked<[Int]>([])
        subject.subscribe(next: { value in
            first.withLock { $0.append(value) }
            if value < 3 { subject.send(value + 1) }
        })
        subject.subscribe(next: { value in second.withLock { $0.append(value) } })
        subject.send(1)
        #expect(first.withLock { $0 } == [1, 2, 3])
        #expect(second.withLock { $0 } == [1, 2, 3])
        let late = Locked<[Int]>([])
        subject.subscribe(next: { value in late.withLock { $0.append(value) } })
        #expect(late.withLock { $0 } == [1, 2, 3])
    }

    /// Several threads send while subscribers join and leave: each subscriber sees a
    /// gap-free, duplicate-free, ordered run of the one sequence order; nothing deadlocks.
    @Test(arguments: [nil, 0, 16] as [Int?])
    func concurrentSendsAndSubscriptionsGiveEverySubscriberAnOrderedSuffix(capacity: Int?) async {
        let subject = ReplaySubject<Int>(capacity: capacity)
        let senders = 4
        let perSender = 2_000
        // The one order: the value committed at each sequence number.
        let order = Locked<[UInt64: Int]>([:])
        let observed = Locked<[[Int]]>([])

        await withTaskGroup(of: Void.self) { group in
            for sender in 0..<senders {
                group.addTask {
                    for i in 0..<perSender {
                        let value = sender * 1_000_000 + i
                        subject.send(.value(value)) { result in
                            if case .success(let entry) = result {
                                order.withLock { $0[entry.sequence] = value }
                            }
                        }
                    }
                }
            }
            for joiner in 0..<8 {
                group.addTask {
                    var random = SeededGenerator(seed: UInt64(joiner))
                    for _ in 0..<20 {
                        let seen = Locked<[Int]>([])
                        let keep = Int.random(in: 1...200, using: &random)
                        let done = Locked(false)
                        let subscription = subject.signal.subscribe(next: { value in
                            seen.withLock { $0.append(value) }
                            // Re-entrant reads of the subject's state must not deadlock.
                            if seen.withLock({ $0.count }) == keep { done.withLock { $0 = true } }
                        })
                        while !done.withLock({ $0 }) && order.withLock({ $0.count }) < senders * perSender {
                            await Task.yield()
                        }
                        subscription.dispose()
                        let run = seen.withLock { $0 }
                        observed.withLock { $0.append(run) }
                    }
                }
            }
        }

        let total = senders * perSender
        let sequence = order.withLock { order in (1...UInt64(total)).map { order[$0]! } }
        var position: [Int: Int] = [:]
        for (index, value) in sequence.enumerated() { position[value] = index }
        for run in observed.withLock({ $0 }) where !run.isEmpty {
            let start = position[run[0]]!
            #expect(Array(sequence[start..<start + run.count]) == run, "a subscriber saw a gap, duplicate or reordering")
        }
        // Each sender's own values keep their order in the one sequence.
        for sender in 0..<senders {
            let own = sequence.filter { $0 / 1_000_000 == sender }
            #expect(own == own.sorted())
        }
    }
}
