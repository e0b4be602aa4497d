import Foundation
import Testing

@testable import ReplayServer

/// A source's output cut into events, however the pipe splits it.
@Suite("Framer")
struct FramerTests {
    func texts(_ events: [Data]) -> [String] { events.map { String(decoding: $0, as: UTF8.self) } }

    @Test func linesAcrossReadsWithCRLFAndATailWithoutNewline() {
        var framer = Framer(.lines)
        #expect(texts(framer.feed(Data("one\r\ntw".utf8))) == ["one"])
        #expect(texts(framer.feed(Data("o\n\nthr".utf8))) == ["two", ""])
        #expect(framer.finish().map { String(decoding: $0, as: UTF8.self) } == "thr")
        #expect(framer.finish() == nil)
    }

    @Test func nulSeparatedRecordsKeepNewlines() {
        var framer = Framer(.nul)
        #expect(texts(framer.feed(Data("a\nb\u{0}c".utf8))) == ["a\nb"])
        #expect(texts(framer.feed(Data("\u{0}".utf8))) == ["c"])
        #expect(framer.finish() == nil)
    }

    @Test func wholeOutputIsOneEventAtTheEnd() {
        var framer = Framer(.whole)
        #expect(framer.feed(Data("a\nb".utf8)).isEmpty)
        #expect(framer.feed(Data("\u{0}c".utf8)).isEmpty)
        #expect(framer.finish().map { String(decoding: $0, as: UTF8.self) } == "a\nb\u{0}c")
    }
}
