import Foundation
import GRDB
import ReplayModel
import ReplayStore
import ReplayTesting
import Testing

/// A source's options are one type from CREATE's words to the database and back; a bad
/// value is an error wherever it is met (it used to fall back to the defaults in silence).
@Suite struct SourceOptionsTests {
    @Test func wordsGiveTheTypedOptionsAndBack() throws {
        let options = try SourceOptions(words: ["framing": "nul", "restart": "on-failure", "max_restarts": "2", "restart_delay": "0.5", "grace": "0"])
        #expect(options.framing == .nul)
        #expect(options.restart == .onFailure)
        #expect(options.maxRestarts == 2)
        #expect(options.restartDelay == 0.5)
        #expect(options.grace == 0)
        #expect(try SourceOptions(words: options.words) == options)
        #expect(SourceOptions().words.isEmpty)
    }

    /// A schedule: from the line's one word (fields joined by `_`) or a declaration's
    /// spaces, kept as JSON text with spaces, given back as one word.
    @Test func aScheduleTravelsAsOneWordAndIsKeptAsText() throws {
        let options = try SourceOptions(words: ["schedule": "CRON_TZ=Europe/Paris_0_9_*_*_MON-FRI"])
        #expect(options.schedule?.text == "CRON_TZ=Europe/Paris 0 9 * * MON-FRI")
        #expect(options.words["schedule"] == "CRON_TZ=Europe/Paris_0_9_*_*_MON-FRI")
        #expect(options.json.contains(#""schedule":"CRON_TZ=Europe\/Paris 0 9 * * MON-FRI""#), "\(options.json)")
        #expect(try SourceOptions(json: options.json) == options)
        #expect(throws: SourceOptions.Invalid("schedule: the hour field takes 0-23, not '25'")) { try SourceOptions(words: ["schedule": "0 25 * * *"]) }
    }

    @Test(arguments: [
        (["framing": "paragraphs"], "framing is lines, nul or whole"),
        (["restart": "always"], "restart is never or on-failure"),
        (["max_restarts": "-1"], "max_restarts is a count"),
        (["restart_delay": "0"], "restart_delay is seconds, more than 0"),
        (["grace": "soon"], "grace is seconds"),
        (["colour": "blue"], "unknown source option colour"),
    ])
    func aBadWordIsRefusedWithWhatIsValid(_ words: [String: String], _ message: String) {
        #expect(throws: SourceOptions.Invalid(message)) { try SourceOptions(words: words) }
    }

    @Test func theStoredJSONRoundTripsAndABadOneIsAnError() throws {
        let options = try SourceOptions(words: ["framing": "whole", "grace": "1.5"])
        #expect(try SourceOptions(json: options.json) == options)
        #expect(try SourceOptions(json: "{}") == SourceOptions())
        #expect(throws: SourceOptions.Invalid.self) { try SourceOptions(json: #"{"framing":"paragraphs"}"#) }
        #expect(throws: SourceOptions.Invalid.self) { try SourceOptions(json: "not json") }
    }

    /// A row whose options were edited by hand into something the daemon cannot run by:
    /// opening the store says which stream, instead of running its source with defaults.
    @Test func aStoreWithUnreadableSourceOptionsSaysWhichStream() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/replay.sqlite"
            do {
                let store = try EventStore(location: path)
                _ = try await store.create("ticks", config: StreamConfig(capacity: 10, source: StreamSource(command: "date", connect: .lazy)))
                store.close()
            }
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in try db.execute(sql: #"UPDATE streams SET source_options = '{"framing":"paragraphs"}'"#) }
            try queue.close()
            #expect {
                _ = try EventStore(location: path)
            } throws: { error in
                guard case StoreError.invalidConfig(let reason) = error else { return false }
                return reason.contains("stream 'ticks'") && reason.contains("paragraphs")
            }
        }
    }
}
