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
}
