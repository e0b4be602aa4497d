import NIOCore
import Testing

@testable import ReplayProtocol

/// The frames that come once per event (PUB, `+OK <seq>`, EVENT) are encoded and decoded
/// on fast paths that bypass the general word splitting. These tests hold the fast paths
/// to the same answers as the general ones.
@Suite("Hot-path codec")
struct HotPathCodecTests {
    @Test(arguments: [0, 1, 9, 10, 99, 100, 12_345, UInt64(UInt32.max), UInt64.max] as [UInt64])
    func decimalsAreWrittenAsTheirText(_ value: UInt64) {
        var buffer = ByteBuffer()
        buffer.writeDecimal(value)
        #expect(String(buffer: buffer) == String(value))
    }

    /// `writeEvent` and `writeEventLine` write each frame in one piece into the buffer's
    /// free space (`FrameBytes`): the bytes must be exactly the frame's text, at the
    /// longest numbers, with names of several-byte characters, empty and binary payloads,
    /// times that are not contiguous bytes, and a buffer that has to grow between frames.
    @Test func eventFramesWrittenInOnePieceAreTheirText() {
        let cases: [(stream: String, sid: String, sequence: UInt64, payload: [UInt8])] = [
            ("s", "a", 0, []),
            ("orders/eu", "sub-1", 1, Array("hello".utf8)),
            ("ström/日本", "ß", UInt64.max, [0, 13, 10, 255]),
            (String(repeating: "n", count: 255), String(repeating: "i", count: 64), 9_999_999_999, Array(repeating: 0x61, count: 70_000)),
        ]
        let time = "2026-11-27T03:54:08.123Z"
        var buffer = ByteBuffer()
        buffer.reserveCapacity(8)
        var expected: [UInt8] = []
        for event in cases {
            event.payload.withUnsafeBytes { payload in
                ServerFrame.writeEvent(stream: event.stream, sid: event.sid, sequence: event.sequence, time: time.utf8, payload: payload, into: &buffer)
            }
            expected += Array("EVENT \(event.stream) \(event.sid) \(event.sequence) \(time) \(event.payload.count)\r\n".utf8) + event.payload + [13, 10]
            // A time that is not contiguous storage takes the byte-by-byte path.
            ServerFrame.writeEventLine(
                stream: event.stream, sid: event.sid, sequence: event.sequence, time: time.utf8.lazy.map { $0 }, size: event.payload.count,
                into: &buffer)
            expected += Array("EVENT \(event.stream) \(event.sid) \(event.sequence) \(time) \(event.payload.count)\r\n".utf8)
        }
        #expect(Array(buffer.readableBytesView) == expected)
    }

    @Test func wordsAreNumbersOnlyWhenTheyAreDigitsThatFit() {
        func number(_ text: String) -> UInt64? {
            text.utf8.withContiguousStorageIfAvailable { LineWords.integer(UnsafeRawBufferPointer($0), as: UInt64.self) } ?? nil
        }
        #expect(number("0") == 0)
        #expect(number("18446744073709551615") == .max)
        #expect(number("18446744073709551616") == nil)  // overflows
        #expect(number("99999999999999999999") == nil)
        #expect(number("") == nil)
        #expect(number("-1") == nil)
        #expect(number("+1") == nil)
        #expect(number("1x") == nil)
        #expect(Array("4294967296".utf8).withUnsafeBytes { LineWords.integer($0, as: UInt32.self) } == nil)
    }

    @Test func lineWordsSkipSpacesAndTabs() {
        let (seen, atEnd) = try! LineWords.reading(ByteBuffer(string: "  PUB\t orders   12 ")) { words in
            var seen: [String] = []
            while let word = words.next() { seen.append(LineWords.string(word)) }
            return (seen, words.atEnd())
        }
        #expect(seen == ["PUB", "orders", "12"])
        #expect(atEnd)
    }

    /// Consecutive events reuse the previous event's strings when the bytes repeat; a
    /// change in any of them must still show.
    @Test func consecutiveEventsKeepTheirOwnStreamSidAndTime() throws {
        let frames: [ServerFrame] = [
            .event(stream: "s", sid: "a", sequence: 1, time: "2026-11-22T03:00:00.000Z", payload: ByteBuffer(string: "1")),
            .event(stream: "s", sid: "a", sequence: 2, time: "2026-11-22T03:00:00.000Z", payload: ByteBuffer(string: "2")),
            .event(stream: "s", sid: "a", sequence: 3, time: "2026-11-22T03:00:00.001Z", payload: ByteBuffer()),
            .event(stream: "t", sid: "b", sequence: 3, time: "2026-11-22T03:00:00.001Z", payload: ByteBuffer(string: "x")),
            .event(stream: "s", sid: "ab", sequence: 4, time: "2026-11-22T03:00:00.0010Z", payload: ByteBuffer(string: "y")),
            .published(sequence: 18_446_744_073_709_551_615), .ok,
        ]
        var buffer = ByteBuffer()
        for frame in frames { frame.write(into: &buffer) }
        var decoder = ServerFrameDecoder()
        var decoded: [ServerFrame] = []
        while let frame = try decoder.next(&buffer) { decoded.append(frame) }
        #expect(decoded == frames)
    }

    @Test func hotLinesWithBadNumbersAreBadFrames() {
        for line in ["EVENT s a 1x 2026-11-22T03:00:00.000Z 1\n", "EVENT s a 1 t 99999999999\n", "+OK -3\n"] {
            var decoder = ServerFrameDecoder()
            var buffer = ByteBuffer(string: line)
            #expect(throws: ReplayError.self, "\(line)") { _ = try decoder.next(&buffer) }
        }
    }

    /// A PUB line the fast path does not take (lower case, extra words, a bad size) gets
    /// the general parser's answer.
    @Test func unusualPublishLinesGetTheGeneralParsersAnswer() throws {
        var decoder = CommandDecoder()
        var buffer = ByteBuffer(string: "pub s 1\nx\nPUB s 1 extra\nPUB s -1\nPUB  s\t2\nab\n")
        var decoded: [InboundCommand] = []
        while let next = try decoder.next(&buffer) { decoded.append(next) }
        #expect(decoded.count == 4)
        #expect(decoded[0] == .command(.publish(stream: "s", payload: ByteBuffer(string: "x"))))
        guard case .invalid(let extra) = decoded[1], case .invalid(let negative) = decoded[2] else {
            Issue.record("expected two errors, got \(decoded)")
            return
        }
        #expect(extra.code == .badCommand)
        #expect(negative.code == .badCommand)
        #expect(decoded[3] == .command(.publish(stream: "s", payload: ByteBuffer(string: "ab"))))
    }

    /// PUB lines with options: the fast path and the general parser give the same command
    /// or the same refusal, line by line.
    @Test(arguments: [
        "PUB s expect=3 1", "PUB s producer=p epoch=2 pseq=7 1", "PUB s pseq=7 expect=0 epoch=2 producer=p 1",
        "PUB s expect=3 expect=4 1", "PUB s producer=p epoch=2 1", "PUB s expect=x 1", "PUB s bogus=1 1",
        "PUB s expect 1", "PUB s expect=3 -1", "PUB s producer= epoch=0 pseq=0 1",
        "PUB s trace=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 1", "PUB s trace=00-xyz 1",
        "PUB s expect=2 trace=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 1",
    ])
    func publishLinesWithOptionsDecodeAsTheGeneralParserSays(line: String) throws {
        var decoder = CommandDecoder()
        var buffer = ByteBuffer(string: line + "\r\nx\r\n")
        let fast = try decoder.next(&buffer)
        let general: InboundCommand
        do {
            switch try CommandParser.parse(Wire.words(ByteBuffer(string: line))) {
            case .needsPayload(let awaiting, _): general = .command(awaiting.complete(with: ByteBuffer(string: "x")))
            case .refusedPayload(let error, _): general = .invalid(error)
            default: throw TestFailureText("\(line) must need a payload")
            }
        } catch let error as ReplayError {
            general = .invalid(error)
        }
        switch (fast, general) {
        case (.invalid(let a)?, .invalid(let b)): #expect(a.code == b.code, "\(line)")
        default: #expect(fast == general, "\(line)")
        }
    }
}

struct TestFailureText: Error {
    let text: String
    init(_ text: String) { self.text = text }
}
