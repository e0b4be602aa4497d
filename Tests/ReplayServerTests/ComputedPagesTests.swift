import Foundation
import ReplayDerive
import ReplayModel
import ReplayStore
import ReplayTesting
import Testing

@testable import ReplayServer

/// A stateless derivation's pages over a real store (`ComputedPages`): the page after the
/// one handed out is read ahead and taken when the step ended at its end, read again when
/// it did not, and every page's outputs are the program's for its events, in order.
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

        mutating func next(after positions: [String: UInt64]) throws -> (events: [InputEvent], outputs: [String]?) {
            let program = program
            let (events, computed) = try pages.next(reader, reader.streams(), after: positions, stateless: true) { event in
                program.result(json: event.payload)
            }
            let outputs = computed?.map { result in (try? result.get())?.map { String(decoding: $0, as: UTF8.self) }.joined() ?? "failed" }
            return (events, outputs)
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
}
