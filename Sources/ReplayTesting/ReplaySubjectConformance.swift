import Dispatch
import ReplayCore
import Testing

/// The replay-subject behaviour every `ReplayBuffer` must give, as runnable checks.
///
/// Each check takes a factory for an empty buffer of a given capacity (`nil` = unlimited),
/// so the same examples run over the in-memory ring and over a SQLite stream. Sends wait
/// until the buffer committed the event (and the subject delivered it), which is instant
/// for memory and a transaction for SQLite; times are virtual either way.
public struct ReplaySubjectConformance: Sendable {
    public typealias MakeBuffer = @Sendable (_ capacity: Int?) async throws -> any ReplayBuffer<String>

    let makeBuffer: MakeBuffer

    public init(makeBuffer: @escaping MakeBuffer) {
        self.makeBuffer = makeBuffer
    }

    /// Sends and waits until committed and delivered.
    public static func sendAndWait(_ subject: ReplaySubject<String>, _ event: Event<String>) {
        let done = DispatchSemaphore(value: 0)
        subject.send(event) { _ in done.signal() }
        done.wait()
    }

    /// E4 (replay half): subs 1,2 at 0.1; "package 1" at 1; subs 3,4 at 1.1; "package 2" at 2.
    public func e4ReplaySubjectGivesHistoryToLateSubscribers() async throws {
        let timeline = Timeline()
        let subject = ReplaySubject(buffer: try await makeBuffer(nil))
        let s = timeline.scheduler
        s.at(0.1) {
            subject.signal.subscribe(timeline.observer("1"))
            subject.signal.subscribe(timeline.observer("2"))
        }
        s.at(1) { Self.sendAndWait(subject, .value("package 1")) }
        s.at(1.1) {
            subject.signal.subscribe(timeline.observer("3"))
            subject.signal.subscribe(timeline.observer("4"))
        }
        s.at(2) { Self.sendAndWait(subject, .value("package 2")) }
        s.run()
        #expect(
            timeline.all == [
                .init(1, "1", "package 1"), .init(1, "2", "package 1"),
                .init(1.1, "3", "package 1"), .init(1.1, "4", "package 1"),
                .init(2, "1", "package 2"), .init(2, "2", "package 2"),
                .init(2, "3", "package 2"), .init(2, "4", "package 2"),
            ])
    }

    /// E11: unbounded buffer; sub 1 at 0; p1 at 1, p2 at 2; sub 2 at 4 gets both at once.
    public func e11BufferReplaysToLateSubscriber() async throws {
        let timeline = Timeline()
        let subject = ReplaySubject(buffer: try await makeBuffer(nil))
        let s = timeline.scheduler
        s.at(0) { subject.signal.subscribe(timeline.observer("1")) }
        s.at(1) { Self.sendAndWait(subject, .value("p1")) }
        s.at(2) { Self.sendAndWait(subject, .value("p2")) }
        s.at(4) { subject.signal.subscribe(timeline.observer("2")) }
        s.run()
        #expect(
            timeline.all == [
                .init(1, "1", "p1"), .init(2, "1", "p2"),
                .init(4, "2", "p1"), .init(4, "2", "p2"),
            ])
    }

    /// E15: capacity 1 replays only C; capacity 3 replays A B C.
    public func e15CapacityLimitsTheReplay() async throws {
        for (capacity, expected) in [(1, ["C"]), (3, ["A", "B", "C"])] {
            let timeline = Timeline()
            let subject = ReplaySubject(buffer: try await makeBuffer(capacity))
            for value in ["A", "B", "C"] { Self.sendAndWait(subject, .value(value)) }
            timeline.scheduler.at(2) { subject.signal.subscribe(timeline.observer("late")) }
            timeline.scheduler.run()
            #expect(timeline.values(of: "late") == expected, "capacity \(capacity)")
            #expect(timeline.of("late").allSatisfy { $0.time == 2 })
        }
    }

    /// The terminal event is stored and replayed after the values, and nothing is
    /// appended after it.
    public func terminalEventIsReplayedAfterValues() async throws {
        let timeline = Timeline()
        let subject = ReplaySubject(buffer: try await makeBuffer(2))
        for value in ["a", "b", "c"] { Self.sendAndWait(subject, .value(value)) }
        Self.sendAndWait(subject, .completed)
        Self.sendAndWait(subject, .value("after the end"))
        subject.signal.subscribe(timeline.observer("late"))
        #expect(timeline.of("late").map(\.what) == ["b", "c", "completed"])
    }

    /// Random sends, subscription points and capacities: a subscriber arriving after `k`
    /// values receives exactly the last min(capacity, k) of them, then every live value,
    /// then the terminal event.
    public func randomSubscriptionPointsReceiveTheRightSuffix(seed: UInt64, rounds: Int) async throws {
        var random = SeededGenerator(seed: seed)
        for round in 0..<rounds {
            let capacity: Int? = [nil, 0, 1, 2, 3, 7, 50].randomElement(using: &random)!
            let total = Int.random(in: 0...40, using: &random)
            let subscribeAfter = (0..<3).map { _ in Int.random(in: 0...total, using: &random) }
            let fails = Bool.random(using: &random)
            let subject = ReplaySubject(buffer: try await makeBuffer(capacity))
            let timeline = Timeline()
            for k in 0...total {
                for (index, point) in subscribeAfter.enumerated() where point == k {
                    subject.signal.subscribe(timeline.observer("s\(index)"))
                }
                if k < total { Self.sendAndWait(subject, .value("v\(k)")) }
            }
            Self.sendAndWait(subject, fails ? .failed(TestFailure("boom")) : .completed)
            let terminal = fails ? "failed: boom" : "completed"
            for (index, point) in subscribeAfter.enumerated() {
                let replayed = min(capacity ?? point, point)
                let expected = (point - replayed..<total).map { "v\($0)" } + [terminal]
                #expect(
                    timeline.of("s\(index)").map(\.what) == expected,
                    "seed \(seed) round \(round): capacity \(String(describing: capacity)), subscribed after \(point) of \(total)")
            }
        }
    }

    /// Runs every check.
    public func runAll(seed: UInt64 = 42, rounds: Int = 40) async throws {
        try await e4ReplaySubjectGivesHistoryToLateSubscribers()
        try await e11BufferReplaysToLateSubscriber()
        try await e15CapacityLimitsTheReplay()
        try await terminalEventIsReplayedAfterValues()
        try await randomSubscriptionPointsReceiveTheRightSuffix(seed: seed, rounds: rounds)
    }
}

/// An error with a readable message, for tests.
public struct TestFailure: Error, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
