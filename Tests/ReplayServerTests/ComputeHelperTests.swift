import Foundation
import ReplayDerive
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
        let results = helper.finish(helper.submit(events)) { event in
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
            let results = helper.finish(helper.submit(events)) { event in Result { () throws(JQProgram.Failure) in try program.run(json: event.payload) } }
            #expect(results.map { (try? $0.get())?.first.map { String(decoding: $0, as: UTF8.self) } } == (1...200).map { "\(page * 1_000 + $0)" })
        }
    }

    /// A page submitted ahead is computed by the helper while nobody finishes it (the
    /// runner feeds the page before it meanwhile); a dropped page holds up nothing after it.
    @Test func aPageSubmittedAheadIsComputedByTheHelperAlone() throws {
        let program = try JQProgram(".n")
        let helper = ComputeHelper(program: ".n", budget: .init())
        defer { helper.retire() }
        func page(_ base: Int) -> [InputEvent] {
            (1...640).map { n in InputEvent(stream: "in", sequence: UInt64(n), millis: 0, payload: Data(#"{"n":\#(base + n)}"#.utf8)) }
        }
        func texts(_ results: [ComputeHelper.Computed]) -> [String] {
            results.map { (try? $0.get())?.map { String(decoding: $0, as: UTF8.self) }.joined() ?? "failed" }
        }
        let ahead = helper.submit(page(1_000))
        // A guard of 30 s, not a timing: the helper's ten chunks, with nobody else taking any.
        let deadline = Date(timeIntervalSinceNow: 30)
        while helper.helped < 10, Date() < deadline { usleep(1_000) }
        #expect(helper.helped == 10, "the helper computed the whole page by itself")
        var computedHere = 0
        let results = helper.finish(ahead) { event in
            computedHere += 1
            return program.result(json: event.payload)
        }
        #expect(computedHere == 0)
        #expect(texts(results) == (1...640).map { "\(1_000 + $0)" })

        helper.discard(helper.submit(page(2_000)))
        let after = helper.finish(helper.submit(page(3_000))) { program.result(json: $0.payload) }
        #expect(texts(after) == (1...640).map { "\(3_000 + $0)" })
    }
}
