import Foundation
import ReplayDerive
import ReplayModel
import Testing

/// The operators' semantics, event by event, with the articles' and ReactiveCocoa's own
/// examples where they have one (ReactiveCocoa's `scan` running sum, `take(2)`,
/// `skip(1)`, `combineLatest`, `distinctUntilChanged`).
@Suite("Derivation operators")
struct OperatorTests {
    static func events(_ payloads: [String], stream: String = "in", millis: (Int) -> Int64 = { Int64($0) * 10 }) -> [InputEvent] {
        payloads.enumerated().map { index, payload in
            InputEvent(stream: stream, sequence: UInt64(index + 1), millis: millis(index), payload: Data(payload.utf8))
        }
    }

    /// Feeds every event and returns the outputs as text.
    static func run(_ engine: DerivationEngine, _ events: [InputEvent]) throws -> [String] {
        try events.flatMap { try engine.feed($0) }.map { String(decoding: $0.payload, as: UTF8.self) }
    }

    @Test func mapMakesOneOutputPerEvent() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: "{id, total: (.qty * .price)}"))
        let outputs = try Self.run(engine, Self.events([#"{"id":1,"qty":2,"price":5}"#, #"{"id":2,"qty":1,"price":7}"#]))
        #expect(outputs == [#"{"id":1,"total":10}"#, #"{"id":2,"total":7}"#])
    }

    @Test func filterKeepsTheEventsItSelects() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: "select(.amount > 100)"))
        let outputs = try Self.run(engine, Self.events([#"{"amount":50}"#, #"{"amount":150}"#, #"{"amount":101}"#]))
        #expect(outputs == [#"{"amount":150}"#, #"{"amount":101}"#])
    }

    @Test func flattenMapMakesManyOutputsEachWithItsOrigin() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: ".items[]"))
        let outputs = try Self.events([#"{"items":[1,2]}"#, #"{"items":[]}"#, #"{"items":[3]}"#]).flatMap { try engine.feed($0) }
        #expect(outputs.map { String(decoding: $0.payload, as: UTF8.self) } == ["1", "2", "3"])
        #expect(outputs.map(\.originSequence) == [1, 1, 3])
        #expect(outputs.allSatisfy { $0.originStream == "in" })
    }

    /// ReactiveCocoa's `scan(0, +)` over 1, 2, 3 sends 1, 3, 6.
    @Test func scanIsARunningFoldThatEmitsItsState() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: ".state + .event", scan: "0"))
        #expect(try Self.run(engine, Self.events(["1", "2", "3"])) == ["1", "3", "6"])
        #expect(engine.state.accumulator == "6")
    }

    @Test func scanKeepsARunningSumPerKeyAndMayEmitSomethingElse() throws {
        let program = ".event as $e | (.state | .[$e.customer] += $e.amount) as $s | {state: $s, emit: [{customer: $e.customer, total: $s[$e.customer]}]}"
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: program, scan: "{}"))
        let outputs = try Self.run(
            engine, Self.events([#"{"customer":"a","amount":5}"#, #"{"customer":"b","amount":1}"#, #"{"customer":"a","amount":2}"#]))
        #expect(outputs == [#"{"customer":"a","total":5}"#, #"{"customer":"b","total":1}"#, #"{"customer":"a","total":7}"#])
        #expect(engine.state.accumulator == #"{"a":7,"b":1}"#)
    }

    /// A keyed scan folds each key apart: a running sum per customer.
    @Test func aKeyedScanFoldsEachKeyApartAndResumesFromItsStates() throws {
        let spec = DerivationSpec(inputs: ["in"], program: ".state + .event.amount", scan: "0", scanKey: ".customer")
        let engine = try DerivationEngine(spec)
        let outputs = try Self.run(
            engine, Self.events([#"{"customer":"a","amount":5}"#, #"{"customer":"b","amount":1}"#, #"{"customer":"a","amount":2}"#]))
        #expect(outputs == [#"{"key":"a","state":5}"#, #"{"key":"b","state":1}"#, #"{"key":"a","state":7}"#])
        #expect(engine.state.accumulator == #"{"a":7,"b":1}"#)
        let resumed = try DerivationEngine(spec, state: engine.state.json)
        #expect(
            try Self.run(resumed, [InputEvent(stream: "in", sequence: 4, millis: 0, payload: Data(#"{"customer":"b","amount":10}"#.utf8))]) == [
                #"{"key":"b","state":11}"#
            ])
        // A key that is neither a string nor a number is a runtime error, the states as they were.
        #expect(throws: JQProgram.Failure.self) {
            try resumed.feed(InputEvent(stream: "in", sequence: 5, millis: 0, payload: Data(#"{"customer":[1],"amount":1}"#.utf8)))
        }
        #expect(resumed.state.accumulator == #"{"a":7,"b":11}"#)
    }

    /// A stored state is where a restarted derivation goes on from.
    @Test func scanResumesFromItsStoredState() throws {
        let first = try DerivationEngine(DerivationSpec(inputs: ["in"], program: ".state + .event", scan: "0"))
        _ = try Self.run(first, Self.events(["1", "2"]))
        let second = try DerivationEngine(first.spec, state: first.state.json)
        #expect(try Self.run(second, [InputEvent(stream: "in", sequence: 3, millis: 30, payload: Data("3".utf8))]) == ["6"])
    }

    /// ReactiveCocoa's `take(2)`: two values, then the signal completes.
    @Test func takeCompletesAfterItsCount() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: ".", take: 2))
        #expect(try Self.run(engine, Self.events(["1", "2", "3"])) == ["1", "2"])
        #expect(engine.isCompleted)
    }

    @Test func skipDropsTheFirstOutputs() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: ".", skip: 1))
        #expect(try Self.run(engine, Self.events(["1", "2", "3"])) == ["2", "3"])
    }

    @Test func takeUntilCompletesWhenItsStreamHasAnEvent() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: ".", takeUntil: "stop"))
        var outputs = try Self.run(engine, Self.events(["1"]))
        outputs += try Self.run(engine, Self.events(["x"], stream: "stop"))
        outputs += try Self.run(engine, [InputEvent(stream: "in", sequence: 2, millis: 20, payload: Data("2".utf8))])
        #expect(outputs == ["1"])
        #expect(engine.isCompleted)
    }

    /// ReactiveCocoa's `skipRepeats`, the articles' `distinctUntilChanged`: 1 1 2 2 1 → 1 2 1.
    @Test func distinctDropsAnOutputEqualToTheOneBefore() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: ".", distinct: true))
        #expect(try Self.run(engine, Self.events(["1", "1", "2", "2", "1"])) == ["1", "2", "1"])
    }

    /// combineLatest: nothing until every input has sent, then the latest of each.
    @Test func combineLatestWaitsForEveryInputThenEmitsTheLatestOfEach() throws {
        let spec = DerivationSpec(inputs: ["a", "b"], program: "[.latest.a, .latest.b]", combineLatest: true)
        let engine = try DerivationEngine(spec)
        var outputs: [String] = []
        for (stream, payload) in [("a", "1"), ("a", "2"), ("b", "10"), ("a", "3"), ("b", "20")] {
            outputs += try Self.run(engine, Self.events([payload], stream: stream))
        }
        #expect(outputs == ["[2,10]", "[3,10]", "[3,20]"])
    }

    /// A tumbling window of one minute by commit time: its fold is emitted, with its
    /// bounds, by the first event of a later window.
    @Test func windowEmitsItsFoldWhenALaterWindowBegins() throws {
        let spec = DerivationSpec(inputs: ["in"], program: ".state + .event", scan: "0", window: 60)
        let engine = try DerivationEngine(spec)
        let minute: Int64 = 60_000
        let times = [0, 10_000, 59_999, minute, minute + 5, 3 * minute]
        let outputs = try Self.run(engine, Self.events(["1", "2", "3", "10", "20", "100"], millis: { times[$0] }))
        #expect(outputs.count == 2)
        #expect(outputs[0] == #"{"start":"1970-01-01T00:00:00.000Z","end":"1970-01-01T00:01:00.000Z","events":3,"state":6}"#)
        #expect(outputs[1] == #"{"start":"1970-01-01T00:01:00.000Z","end":"1970-01-01T00:02:00.000Z","events":2,"state":30}"#)
        #expect(engine.state.accumulator == "100")
    }

    /// A failing event leaves the state as it was: the error policy decides with nothing
    /// half-applied.
    @Test func aRuntimeErrorLeavesTheStateAsItWas() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: ".state + .event.n", scan: "0"))
        _ = try Self.run(engine, Self.events([#"{"n":1}"#]))
        #expect(throws: JQProgram.Failure.self) { try engine.feed(InputEvent(stream: "in", sequence: 2, millis: 0, payload: Data(#"{"n":"x"}"#.utf8))) }
        #expect(throws: JQProgram.Failure.self) { try engine.feed(InputEvent(stream: "in", sequence: 3, millis: 0, payload: Data("not json".utf8))) }
        #expect(try Self.run(engine, [InputEvent(stream: "in", sequence: 4, millis: 0, payload: Data(#"{"n":2}"#.utf8))]) == ["3"])
    }

    @Test func aProgramThatProducesWithoutEndIsCutOffByItsBudget() throws {
        let engine = try DerivationEngine(DerivationSpec(inputs: ["in"], program: "range(1e18)"), budget: .init(maxOutputs: 1000))
        let error = #expect(throws: JQProgram.Failure.self) { try engine.feed(Self.events(["1"])[0]) }
        #expect(error?.message.contains("more than 1000 outputs") == true)
        let growing = try DerivationEngine(
            DerivationSpec(inputs: ["in"], program: "[limit(100000; repeat(.))] | map(\"aaaaaaaa\") | add"), budget: .init(maxOutputBytes: 1 << 16))
        #expect(throws: JQProgram.Failure.self) { try growing.feed(Self.events(["1"])[0]) }
    }
}
