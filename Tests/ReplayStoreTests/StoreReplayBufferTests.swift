import Foundation
import ReplayCore
import ReplayStore
import ReplaySync
import ReplayTesting
import Testing

/// The core's replay-subject checks (E4, E11, E15, terminal replay, random subscription
/// points) over both buffers: the in-memory ring and a SQLite stream.
@Suite("ReplaySubject over memory and SQLite buffers")
struct StoreReplayBufferTests {
    enum Kind: String, CaseIterable, Sendable { case memory, sqlite }

    @Test(arguments: Kind.allCases)
    func replaySubjectConformance(kind: Kind) async throws {
        try await withTemporaryDirectory { directory in
            let store = try openStore(directory)
            defer { store.close() }
            let streams = Locked(0)
            let conformance = ReplaySubjectConformance { capacity in
                switch kind {
                case .memory:
                    return RingBuffer(capacity: capacity)
                case .sqlite:
                    let name = "s\(streams.withLock { $0 += 1; return $0 })"
                    return try await StoreReplayBuffer<String>(
                        store: store, stream: name, config: StreamConfig(capacity: capacity))
                }
            }
            try await conformance.runAll(seed: 7, rounds: kind == .memory ? 200 : 25)
        }
    }

    @Test func replaySubjectOverSQLiteSurvivesARestart() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let store = try openStore(directory)
                let subject = ReplaySubject(
                    buffer: try await StoreReplayBuffer<String>(store: store, stream: "greetings", config: .init(capacity: 2)))
                for word in ["hello", "hola", "salut"] {
                    ReplaySubjectConformance.sendAndWait(subject, .value(word))
                }
                ReplaySubjectConformance.sendAndWait(subject, .failed(TestFailure("upstream gone")))
                store.close()
            }
            let store = try openStore(directory)
            defer { store.close() }
            let subject = ReplaySubject(
                buffer: try await StoreReplayBuffer<String>(store: store, stream: "greetings", config: .init(capacity: 2)))
            let timeline = Timeline()
            subject.signal.subscribe(timeline.observer("after restart"))
            #expect(timeline.all.map(\.what) == ["hola", "salut", "failed: upstream gone"])
        }
    }
}
