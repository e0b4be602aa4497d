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
    @Test func thePageAfterIsReadAheadAndTakenOnlyWhereTheStepBeforeItEnded() async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite", options: .init(autoCreate: .unlimited))
            defer { store.close() }
            for n in 1...350 { _ = try await store.append(Data(#"{"n":\#(n)}"#.utf8), to: "in") }
            let spec = DerivationSpec(inputs: ["in"], program: ".n * 10")
            var reader = InputReader(store: store, spec: spec, derived: "out")
            reader.page = 100
            let program = try JQProgram(spec.program)
            var pages = ComputedPages(program: spec.program, budget: .init())
            defer { pages.retire() }
            func next(after position: UInt64) throws -> [String] {
                let (events, computed) = try pages.next(reader, reader.streams(), after: ["in": position], stateless: true) { event in
                    program.result(json: event.payload)
                }
                #expect(computed?.count == events.count, "a page of 64 events or more is computed on two threads")
                #expect(events.first?.sequence == position + 1)
                return (computed ?? []).map { result in (try? result.get())?.map { String(decoding: $0, as: UTF8.self) }.joined() ?? "failed" }
            }
            #expect(try next(after: 0) == (1...100).map { "\($0 * 10)" })
            #expect(pages.readAhead == ["in": 100], "the next page was read and submitted before this one was fed")
            #expect(try next(after: 100) == (101...200).map { "\($0 * 10)" })
            #expect(pages.readAhead == ["in": 200])
            // A step that ended at 250 (its outputs filled it): the page read after 200 is
            // dropped, and the one after 250 read.
            #expect(try next(after: 250) == (251...350).map { "\($0 * 10)" })
            #expect(pages.readAhead == nil, "nothing after 350 to read ahead")
        }
    }

    @Test func aPageReadAheadIsDroppedWhenTheInputsChanged() async throws {
        try await withTemporaryDirectory { directory in
            let store = try EventStore(path: directory + "/replay.sqlite", options: .init(autoCreate: .unlimited))
            defer { store.close() }
            // A page of 100, and 80 after it: not a full page, so nothing in it waits on what
            // another input may still get.
            for n in 1...180 { _ = try await store.append(Data(#"{"n":\#(n)}"#.utf8), to: "in/a") }
            let spec = DerivationSpec(inputs: ["in/*"], program: ".n")
            var reader = InputReader(store: store, spec: spec, derived: "out")
            reader.page = 100
            let program = try JQProgram(spec.program)
            var pages = ComputedPages(program: spec.program, budget: .init())
            defer { pages.retire() }
            let compute = { (event: InputEvent) in program.result(json: event.payload) }
            _ = try pages.next(reader, reader.streams(), after: [:], stateless: true, compute: compute)
            #expect(pages.readAhead == ["in/a": 100])
            // A stream the pattern matches, created since: its events may come first.
            _ = try await store.append(Data(#"{"n":0}"#.utf8), to: "in/b")
            let (events, _) = try pages.next(reader, reader.streams(), after: ["in/a": 100], stateless: true, compute: compute)
            #expect(events.contains { $0.stream == "in/b" }, "read again, with the new input")
            #expect(events.filter { $0.stream == "in/a" }.map(\.sequence) == Array(101...180))
        }
    }
}
