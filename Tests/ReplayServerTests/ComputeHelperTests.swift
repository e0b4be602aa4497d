import Foundation
import ReplayDerive
import ReplaySync
import Testing

@testable import ReplayServer

/// A stateless derivation's second thread (`ComputeHelper`): it takes chunks of a page
/// while the runner computes others, and every event's result comes back in input order.
@Suite("A derivation's helper thread")
struct ComputeHelperTests {
    @Test func theHelperTakesChunksAndEveryResultComesBackInInputOrder() throws {
        let source = #"if .n % 7 == 0 then error("sevens fail") else range(.n % 3) | . end"#
        let program = try JQProgram(source)
        let helper = ComputeHelper(program: source, budget: .init())
        defer { helper.retire() }
        let events = (1...1_000).map { n in
            InputEvent(stream: "in", sequence: UInt64(n), millis: 0, payload: Data((n % 97 == 0 ? "not json" : #"{"n":\#(n)}"#).utf8))
        }
        func run(_ event: InputEvent) -> ComputeHelper.Computed {
            Result { () throws(JQProgram.Failure) in try program.run(json: event.payload) }
        }
        var waited = false
        let results = helper.computeAll(events) { event in
            // The runner's first chunk waits for the helper to finish one of its own, so
            // that the page is surely shared (a guard of 30 s, not a timing).
            if !waited {
                waited = true
                let deadline = Date(timeIntervalSinceNow: 30)
                while helper.helped == 0, Date() < deadline { usleep(1_000) }
            }
            return run(event)
        }
        #expect(helper.helped > 0, "the helper computed a chunk")
        func text(_ result: ComputeHelper.Computed) -> String {
            switch result {
            case .success(let outputs): outputs.map { String(decoding: $0, as: UTF8.self) }.joined(separator: ",")
            case .failure(let failure): "failed: \(failure.message)"
            }
        }
        #expect(results.map(text) == events.map { text(run($0)) })
        #expect(results.filter { text($0).hasPrefix("failed") }.count == 1_000 / 7 + 1_000 / 97 - 1_000 / (7 * 97))
    }

    @Test func aSecondPageIsSharedAsTheFirstWas() throws {
        let program = try JQProgram(".n")
        let helper = ComputeHelper(program: ".n", budget: .init())
        defer { helper.retire() }
        for page in 0..<3 {
            let events = (1...200).map { n in
                InputEvent(stream: "in", sequence: UInt64(n), millis: 0, payload: Data(#"{"n":\#(page * 1_000 + n)}"#.utf8))
            }
            let results = helper.computeAll(events) { event in Result { () throws(JQProgram.Failure) in try program.run(json: event.payload) } }
            #expect(results.map { (try? $0.get())?.first.map { String(decoding: $0, as: UTF8.self) } } == (1...200).map { "\(page * 1_000 + $0)" })
        }
    }

    /// The helper reads the page after the positions it was given and starts computing
    /// it; the runner takes it by those positions, and a page read for others is dropped.
    @Test func aPageReadAheadIsTakenByItsPositionsAndOnlyByThem() throws {
        let program = try JQProgram(".n * 2")
        let helper = ComputeHelper(program: ".n * 2", budget: .init())
        defer { helper.retire() }
        let page: @Sendable (Int) -> [InputEvent] = { from in
            (from..<(from + 300)).map { n in InputEvent(stream: "in", sequence: UInt64(n), millis: 0, payload: Data(#"{"n":\#(n)}"#.utf8)) }
        }
        func run(_ event: InputEvent) -> ComputeHelper.Computed { Result { () throws(JQProgram.Failure) in try program.run(json: event.payload) } }
        func texts(_ results: [ComputeHelper.Computed]) -> [String] {
            results.map { (try? $0.get())?.first.map { String(decoding: $0, as: UTF8.self) } ?? "" }
        }
        let read = Locked(false)
        helper.readAhead(after: ["in": 300]) {
            read.withLock { $0 = true }
            return page(301)
        }
        // Taken once the helper read it and computed a chunk (a guard of 30 s, not a timing).
        let deadline = Date(timeIntervalSinceNow: 30)
        while helper.helped == 0, Date() < deadline { usleep(1_000) }
        #expect(read.value, "the helper did the read")
        let taken = try #require(helper.readAhead(after: ["in": 300], run))
        #expect(taken.events.map(\.sequence) == Array(301...600))
        #expect(texts(taken.computed) == (301...600).map { "\($0 * 2)" })
        #expect(helper.readAheadTaken == 1)

        // Read for other positions (the step before stopped early): dropped, not given.
        helper.readAhead(after: ["in": 900]) { page(901) }
        #expect(helper.readAhead(after: ["in": 600], run) == nil)
        // An empty page is not given either: the runner reads for itself, seeing what
        // was committed since.
        helper.readAhead(after: ["in": 600]) { [] }
        #expect(helper.readAhead(after: ["in": 600], run) == nil)
        #expect(helper.readAheadTaken == 1)
        // And the helper still shares a page computed as before.
        #expect(texts(helper.computeAll(page(601), run)) == (601...900).map { "\($0 * 2)" })
    }
}
