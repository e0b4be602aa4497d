import Foundation
import ReplayModel
import Testing

@testable import ReplayStore

/// The store's side of derived streams, on both databases: a step's outputs, state and
/// positions commit together, a step read from moved positions changes nothing, and a
/// redefinition is refused unless it rebuilds.
@Suite("Derivations in the store")
struct DerivationStoreTests {
    static let spec = DerivationSpec(inputs: ["orders"], program: "select(.amount > 100)")

    static func step(_ derivation: Derivation, to position: UInt64, outputs: [(String, UInt64)], state: String? = nil) -> DerivationStep {
        var step = DerivationStep(stream: derivation.stream, expected: derivation.positions, positions: ["orders": position], state: state)
        step.outputs = outputs.map { DerivedOutput(payload: Data($0.0.utf8), originStream: "orders", originSequence: $0.1) }
        step.processed = position - (derivation.positions["orders"] ?? 0)
        return step
    }

    @Test(arguments: StoreKind.allCases)
    func aStepCommitsItsOutputsStateAndPositionsTogether(kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.create("orders", config: StreamConfig(capacity: nil))
            _ = try await store.appendAll([#"{"amount":50}"#, #"{"amount":150}"#], to: "orders")
            let defined = try await store.define(DerivationDefinition(stream: "big", spec: Self.spec, config: StreamConfig(capacity: nil)))
            #expect(defined.positions.isEmpty)
            #expect(store.info("big") != nil)

            let after = try await store.commit(Self.step(defined, to: 2, outputs: [(#"{"amount":150}"#, 2)], state: #"{"emitted":1}"#))
            #expect(after.positions == ["orders": 2])
            #expect(after.processed == 2)
            #expect(try store.read("big", from: 1).map { String(decoding: $0.payload, as: UTF8.self) } == [#"{"amount":150}"#])

            // The row and the output's origin, as anyone reads them.
            let stored = try store.derivations()
            #expect(stored.count == 1)
            #expect(stored.first?.positions == ["orders": 2])
            #expect(stored.first?.state == #"{"emitted":1}"#)
            if kind == .sqlite {
                #expect(try await scalar(store, "SELECT origin_seq FROM derived_events WHERE stream = 'big' AND seq = 1") == 2)
            } else {
                #expect(try await scalar(store, "SELECT split_part(origin, ':', 2)::int FROM event_log WHERE origin IS NOT NULL") == 2)
            }

            // A second runner, or a redo, that read from the old positions changes nothing.
            await #expect(throws: StoreError.self) { try await store.commit(Self.step(defined, to: 2, outputs: [(#"{"amount":150}"#, 2)])) }
            #expect(try store.read("big", from: 1).count == 1)
            #expect(try store.derivations().first?.processed == 2)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRedefinitionIsRefusedUnlessItRebuilds(kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.create("orders", config: StreamConfig(capacity: nil))
            let defined = try await store.define(DerivationDefinition(stream: "big", spec: Self.spec, config: StreamConfig(capacity: nil)))
            _ = try await store.commit(Self.step(defined, to: 1, outputs: [("1", 1)]))
            // The same definition again (a --config declaration at start) is a no-op.
            let again = try await store.define(DerivationDefinition(stream: "big", spec: Self.spec, config: StreamConfig(capacity: nil)))
            #expect(again.positions == ["orders": 1])

            var other = Self.spec
            other.program = "select(.amount > 200)"
            await #expect(throws: StoreError.self) {
                try await store.define(DerivationDefinition(stream: "big", spec: other, config: StreamConfig(capacity: nil)))
            }
            let rebuilt = try await store.define(DerivationDefinition(stream: "big", spec: other, config: StreamConfig(capacity: nil), rebuild: true))
            #expect(rebuilt.positions.isEmpty)
            #expect(rebuilt.spec == other)
            // The old outputs are gone; numbering goes on.
            #expect(try store.read("big", from: 1).isEmpty)
            #expect(store.info("big")?.lastSequence == 1)

            // A plain stream is not redefined as a derived one.
            await #expect(throws: StoreError.self) {
                try await store.define(
                    DerivationDefinition(stream: "orders", spec: DerivationSpec(inputs: ["big"], program: "."), config: StreamConfig(capacity: nil)))
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func deadLettersTakeAndAStopCommitWithTheStep(kind: StoreKind) async throws {
        try await withStoreLocation(kind) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.create("orders", config: StreamConfig(capacity: nil))
            let defined = try await store.define(DerivationDefinition(stream: "big", spec: Self.spec, config: StreamConfig(capacity: nil)))
            var step = Self.step(defined, to: 3, outputs: [("1", 1)])
            step.deadLetters = [Data(#"{"error":"bad","event":"x"}"#.utf8)]
            step.deadLetterStream = "big-errors"
            step.errors = 1
            step.error = "bad"
            step.terminal = .completed
            let after = try await store.commit(step)
            #expect(after.errors == 1)
            #expect(after.error == "bad")
            #expect(store.info("big")?.terminal == .completed)
            #expect(try store.read("big-errors", from: 1).count == 1)

            var stop = Self.step(after, to: 4, outputs: [])
            stop.stop = true
            stop.error = "the program failed"
            #expect(try await store.commit(stop).status == .stopped)
            // A stopped derivation takes no more steps until it is redefined.
            let stopped = try store.derivations()[0]
            await #expect(throws: StoreError.self) { try await store.commit(Self.step(stopped, to: 5, outputs: [])) }
        }
    }

    /// Deleting the derived stream deletes its derivation.
    @Test func deletingTheDerivedStreamDeletesItsDerivation() async throws {
        try await withStoreLocation(.sqlite) { location in
            let store = try openStore(location)
            defer { store.close() }
            _ = try await store.define(DerivationDefinition(stream: "big", spec: Self.spec, config: StreamConfig(capacity: nil)))
            try await store.delete("big")
            #expect(try store.derivations().isEmpty)
        }
    }
}
