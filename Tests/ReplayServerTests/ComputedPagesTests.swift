import Foundation
import ReplayDerive
import ReplayModel
import ReplayStore
import ReplayTesting
import Testing

@testable import ReplayServer

/// A derivation's pages over a real store (`ComputedPages`): the page after the one handed
/// out is read ahead, whatever the program, and taken when the step ended at its end, read
/// again when it did not; a stateless program's pages' outputs are the program's for their
/// events, in order.
@Suite("A derivation's pages read ahead", .timeLimit(.minutes(2)))
struct ComputedPagesTests {
    /// A store holding `count` events `{"n": i}` in `stream`, and the pages of `program`
    /// over `inputs`, 100 events to a page; the pages' own `next` takes the runner's share
    /// of the computing.
    private struct Fixture {
        let store: EventStore
        let reader: InputReader
        let program: JQProgram
        var pages: ComputedPages

        mutating func next(after positions: [String: UInt64], stateless: Bool = true) throws -> (events: [InputEvent], outputs: [String]?) {
            let program = program
            let page = try pages.next(reader, reader.streams(), after: positions, stateless: stateless) { event in
                program.result(json: event.payload)
            }
            let outputs = page.computed?.map { result in (try? result.get())?.map { String(decoding: $0, as: UTF8.self) }.joined() ?? "failed" }
            return (page.events, outputs)
        }
    }

    private func withPages(
        _ count: Int, in stream: String, inputs: [String], program source: String, _ body: (inout Fixture) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite", options: .init(autoCreate: .unlimited))
            defer { store.close() }
            for n in 1...count { _ = try await store.append(Data(#"{"n":\#(n)}"#.utf8), to: stream) }
            let spec = DerivationSpec(inputs: inputs, program: source)
            var reader = InputReader(store: store, spec: spec, derived: "out")
            reader.page = 100
            var fixture = Fixture(store: store, reader: reader, program: try JQProgram(source), pages: ComputedPages(program: source, budget: .init()))
            defer { fixture.pages.retire() }
            try await body(&fixture)
        }
    }

    @Test func thePageAfterIsReadAheadAndTakenOnlyWhereTheStepBeforeItEnded() async throws {
        try await withPages(350, in: "in", inputs: ["in"], program: ".n * 10") { (fixture: inout Fixture) async throws in
            func next(after position: UInt64) throws -> [String]? {
                let (events, outputs) = try fixture.next(after: ["in": position])
                #expect(outputs?.count == events.count, "a page of 64 events or more is computed on two threads")
                #expect(events.first?.sequence == position + 1)
                return outputs
            }
            #expect(try next(after: 0) == (1...100).map { "\($0 * 10)" })
            #expect(fixture.pages.readAhead == ["in": 100], "the next page was read and submitted before this one was fed")
            #expect(try next(after: 100) == (101...200).map { "\($0 * 10)" })
            #expect(fixture.pages.readAhead == ["in": 200])
            // A step that ended at 250 (its outputs filled it): the page read after 200 is
            // dropped, and the one after 250 read.
            #expect(try next(after: 250) == (251...350).map { "\($0 * 10)" })
            #expect(fixture.pages.readAhead == nil, "nothing after 350 to read ahead")
        }
    }

    @Test func aPageReadAheadIsDroppedWhenTheInputsChanged() async throws {
        // A page of 100, and 80 after it: not a full page, so nothing in it waits on what
        // another input may still get.
        try await withPages(180, in: "in/a", inputs: ["in/*"], program: ".n") { fixture in
            _ = try fixture.next(after: [:])
            #expect(fixture.pages.readAhead == ["in/a": 100])
            // A stream the pattern matches, created since: its events may come first.
            _ = try await fixture.store.append(Data(#"{"n":0}"#.utf8), to: "in/b")
            let (events, _) = try fixture.next(after: ["in/a": 100])
            #expect(events.contains { $0.stream == "in/b" }, "read again, with the new input")
            #expect(events.filter { $0.stream == "in/a" }.map(\.sequence) == Array(101...180))
        }
    }

    @Test func aStatefulProgramsNextPageIsReadWhileItComputes() async throws {
        try await withPages(150, in: "in", inputs: ["in"], program: ".n") { fixture in
            let (first, outputs) = try fixture.next(after: ["in": 0], stateless: false)
            #expect(outputs == nil, "a scan's events are computed by the runner, one by one")
            #expect(first.map(\.sequence) == Array(1...100))
            #expect(fixture.pages.readAhead == ["in": 100], "the page after it was read meanwhile")
            // Committed after that read: the page taken is the one read ahead, and the new
            // event is the next step's.
            _ = try await fixture.store.append(Data(#"{"n":151}"#.utf8), to: "in")
            let (second, _) = try fixture.next(after: ["in": 100], stateless: false)
            #expect(second.map(\.sequence) == Array(101...150))
            #expect(try fixture.next(after: ["in": 150], stateless: false).events.map(\.sequence) == [151])
        }
    }

    @Test func positionsAreEachInputsLastEventComputed() {
        func event(_ stream: String, _ sequence: UInt64) -> InputEvent {
            InputEvent(stream: stream, sequence: sequence, millis: 0, payload: Data("{}".utf8))
        }
        let merged = [event("a", 1), event("a", 2), event("b", 7), event("a", 3), event("b", 8)]
        #expect(ComputedPages.positions(after: merged, from: ["a": 0, "c": 5]) == ["a": 3, "b": 8, "c": 5])
        #expect(ComputedPages.positions(after: merged.prefix(3), from: [:]) == ["a": 2, "b": 7])
        #expect(ComputedPages.positions(after: [], from: ["a": 4]) == ["a": 4])
    }
}
