import Foundation
import ReplayDerive
import ReplayModel
import ReplayStore
import ReplayTesting
import Testing

@testable import ReplayServer

/// A derivation's inputs over a real store (`InputReader`): each step reads its inputs as
/// one cut of the log, so commits that land while it reads one input and then another never
/// put a later commit's event of one input ahead of an earlier commit's event of another.
@Suite("A derivation's inputs", .timeLimit(.minutes(2)))
struct InputReaderTests {
    @Test func eachInputIsReadUpToItsLastEventInTheStreamsTaken() async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite", options: .init(autoCreate: .unlimited))
            defer { store.close() }
            _ = try await store.append(Data("a1".utf8), to: "a")
            _ = try await store.append(Data("b1".utf8), to: "b")
            let reader = InputReader(store: store, spec: DerivationSpec(inputs: ["a", "b"], program: "."), derived: "out")
            let inputs = reader.streams()
            // Commits after the cut, to each input: what a step reading one input and then
            // the other may see land between its two reads.
            _ = try await store.append(Data("a2".utf8), to: "a")
            _ = try await store.append(Data("b2".utf8), to: "b")
            func texts(_ events: [InputEvent]) -> [String] { events.map { String(decoding: $0.payload, as: UTF8.self) } }
            #expect(texts(try reader.next(after: [:], in: inputs)) == ["a1", "b1"])
            #expect(texts(try reader.next(after: ["a": 1, "b": 1], in: reader.streams())) == ["a2", "b2"])
        }
    }

    @Test func aPatternsStreamsAndTheNamedInputsAreOneLook() async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite", options: .init(autoCreate: .unlimited))
            defer { store.close() }
            for name in ["orders/us", "orders/eu", "audit", "stop", "out"] { _ = try await store.append(Data("x".utf8), to: name) }
            let spec = DerivationSpec(inputs: ["audit", "orders/*", "orders/us"], program: ".", takeUntil: "stop")
            let reader = InputReader(store: store, spec: spec, derived: "out")
            // The named inputs in their order, the pattern's other streams by name, then the
            // takeUntil stream; the derived stream never.
            #expect(reader.streams().map(\.name) == ["audit", "orders/us", "orders/eu", "stop"])
            // A takeUntil stream the pattern matches is among the pattern's streams.
            let until = DerivationSpec(inputs: ["orders/*"], program: ".", takeUntil: "orders/eu")
            #expect(InputReader(store: store, spec: until, derived: "out").streams().map(\.name) == ["orders/eu", "orders/us"])
        }
    }
}
