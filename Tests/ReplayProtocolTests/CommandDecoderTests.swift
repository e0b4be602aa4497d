import NIOCore
import NIOTestUtils
import ReplayModel
import Testing

@testable import ReplayProtocol

@Suite("CommandDecoder")
struct CommandDecoderTests {
    func decodeAll(_ text: String, maxLine: Int = 4096, maxPayload: Int = 1 << 20) throws -> [InboundCommand] {
        var decoder = CommandDecoder(maxLineLength: maxLine, maxPayload: maxPayload)
        var buffer = ByteBuffer(string: text)
        var out: [InboundCommand] = []
        while let next = try decoder.next(&buffer) { out.append(next) }
        return out
    }

    @Test func decodesEveryVerbWithCRLFOrLF() throws {
        let text =
            "PUB orders 8\r\n{\"id\":1}\r\nsub orders s1 from=5\nUNSUB s1\nCREATE t capacity=10 max_bytes=100 max_age=60\r\n"
            + "CREATE u capacity=unlimited connect=lazy source=4 framing=lines\ndate\nDELETE t\nINFO t\nLIST\nCOMPLETE t\n"
            + "FAIL t 4\nboom\nRESET t drop\nPING\n\n\r\n"
        #expect(
            try decodeAll(text) == [
                .command(.publish(stream: "orders", payload: ByteBuffer(string: "{\"id\":1}"))),
                .command(.subscribe(stream: "orders", sid: "s1", start: .from(5))),
                .command(.unsubscribe(sid: "s1")),
                .command(.create(stream: "t", options: CreateOptions(capacity: .count(10), maxBytes: 100, maxAge: 60))),
                .command(
                    .create(
                        stream: "u",
                        options: CreateOptions(
                            capacity: .unlimited, source: "date", connect: "lazy", sourceOptions: ["framing": "lines"]))),
                .command(.delete(stream: "t")),
                .command(.info(stream: "t")),
                .command(.list),
                .command(.complete(stream: "t")),
                .command(.fail(stream: "t", message: "boom")),
                .command(.reset(stream: "t", keepHistory: false)),
                .command(.ping),
            ])
    }

    @Test func startPositions() throws {
        #expect(try CommandParser.startPosition("all") == .all)
        #expect(try CommandParser.startPosition("NEW") == .new)
        #expect(try CommandParser.startPosition("last=3") == .last(3))
        #expect(try CommandParser.startPosition("since=2026-11-22T03:00:00Z") == .since(1_795_316_400))
        #expect(try CommandParser.startPosition("since=2026-11-22T03:00:00.500Z") == .since(1_795_316_400.5))
        #expect(try CommandParser.startPosition("since=1795316400") == .since(1_795_316_400))
        #expect(throws: ReplayError.self) { try CommandParser.startPosition("from=x") }
        #expect(throws: ReplayError.self) { try CommandParser.startPosition("sometime") }
    }

    /// Payloads are binary-safe: their bytes are counted, never scanned for line ends.
    @Test func binaryPayloadsWithLineEndsInside() throws {
        let payload = "a\r\nb\n\u{0}c"
        let decoded = try decodeAll("PUB s \(payload.utf8.count)\r\n\(payload)\r\nPING\r\n")
        #expect(decoded == [.command(.publish(stream: "s", payload: ByteBuffer(string: payload))), .command(.ping)])
    }

    @Test func recoverableErrorsAreAnsweredAndTheStreamGoesOn() throws {
        let decoded = try decodeAll("FROB x\nPUB s nope\nSUB onlyone\nPUB s 20\n01234567890123456789\nPING\n", maxPayload: 10)
        #expect(decoded.count == 5)
        guard case .invalid(let unknown) = decoded[0], case .invalid(let badSize) = decoded[1],
            case .invalid(let usage) = decoded[2], case .invalid(let tooLarge) = decoded[3]
        else { Issue.record("expected four errors, got \(decoded)"); return }
        #expect(unknown.code == .unknownCommand)
        #expect(badSize.code == .badCommand)
        #expect(usage.code == .badCommand)
        #expect(tooLarge.code == .payloadTooLarge)
        #expect(decoded[4] == .command(.ping), "the oversize payload was skipped, not parsed as commands")
    }

    @Test func aRefusedPublishsPayloadIsSkippedNotReadAsCommands() throws {
        // The payload of each spells a command: a refused PUB must not run it.
        let decoded = try decodeAll("PUB s expect=x 12\r\nDELETE other\r\nPUB s trace=nope 4\r\nPING\r\nPUB s bogus=1 4\r\nPING\r\nPING\r\n")
        #expect(decoded.count == 4)
        for refusal in decoded.prefix(3) {
            guard case .invalid(let error) = refusal else { Issue.record("expected a refusal, got \(refusal)"); continue }
            #expect(error.code == .badCommand)
        }
        #expect(decoded.last == .command(.ping), "only the last PING is a command")
    }

    /// `key=` on the hot path and through the parser (the same command either way), and a
    /// malformed one refused with its payload skipped.
    @Test func aPublishsKeyIsReadOnEitherPath() throws {
        let decoded = try decodeAll("PUB s key=customer-7 1\r\nx\r\nPUB s expect=0 key=café 1\r\ny\r\nPUB s key=a key=b 4\r\nPING\r\nPING\r\n")
        #expect(decoded.count == 4)
        #expect(
            decoded[0] == .command(.publishChecked(stream: "s", payload: ByteBuffer(string: "x"), checks: AppendConditions(key: EventKey("customer-7")))))
        #expect(
            decoded[1]
                == .command(
                    .publishChecked(stream: "s", payload: ByteBuffer(string: "y"), checks: AppendConditions(expectedLastSequence: 0, key: EventKey("café")))))
        // A second key= leaves the hot path; the parser keeps the later one, as it does a
        // second trace=, and the payload is the event's, not a command.
        #expect(
            decoded[2] == .command(.publishChecked(stream: "s", payload: ByteBuffer(string: "PING"), checks: AppendConditions(key: EventKey("b")))))
        #expect(decoded[3] == .command(.ping))
    }

    /// `delay=` and `at=` make a PUB a scheduled one (never on the hot path); what cannot be
    /// scheduled is refused with its payload skipped.
    @Test func aScheduledPublishIsReadAndWhatCannotBeScheduledIsRefused() throws {
        let decoded = try decodeAll(
            "PUB jobs delay=30 key=k 1\r\na\r\nPUB jobs at=2026-12-01T09:00:00Z 1\r\nb\r\nPUB jobs at=2026-12-01T10:00:00+01:00 1\r\nc\r\n"
                + "PUB jobs delay=5 expect=0 4\r\nPING\r\nPUB jobs delay=1 at=2026-12-01T09:00:00Z 4\r\nPING\r\nPUB jobs delay=-1 4\r\nPING\r\n"
                + "PUB jobs delay=99999999 4\r\nPING\r\nATOMIC 1\r\nPUB jobs delay=1 1\r\nx\r\nSCHEDULED jobs 0\r\nUNSCHEDULE jobs x\r\nPING\r\n")
        let nine = try #require(Timestamp.parseRFC3339("2026-12-01T09:00:00Z")).timeIntervalSince1970 * 1000
        #expect(
            decoded.prefix(3) == [
                .command(
                    .schedule(stream: "jobs", payload: ByteBuffer(string: "a"), due: .after(seconds: 30), annotations: AppendConditions(key: EventKey("k")))),
                .command(.schedule(stream: "jobs", payload: ByteBuffer(string: "b"), due: .at(millis: Int64(nine)), annotations: AppendConditions())),
                .command(.schedule(stream: "jobs", payload: ByteBuffer(string: "c"), due: .at(millis: Int64(nine)), annotations: AppendConditions())),
            ])
        let refusals = decoded.dropFirst(3).compactMap { inbound -> String? in
            guard case .invalid(let error) = inbound else { return nil }
            return error.message
        }
        #expect(
            refusals == [
                "a scheduled PUB (delay=, at=) takes key=, trace= and ttl=, not expect= or producer fields",
                "a PUB takes one of delay= and at=",
                "a scheduled PUB takes \(DueTime.format), got 'delay=-1'",
                "a scheduled PUB takes \(DueTime.format), got 'delay=99999999'",
                "an ATOMIC send's PUBs are appended now: delay= and at= are refused in it",
                "SCHEDULED lists 1 to \(ProtocolLimits.maxScheduledListed) events",
                "UNSCHEDULE takes the event's id, a positive integer",
            ])
        #expect(decoded.last == .command(.ping), "every refused payload was skipped, never read as commands")
        #expect(decoded.filter { $0 == .command(.ping) }.count == 1)
    }

    @Test func oversizePayloadIsSkippedAcrossManyReadsWithoutBuffering() throws {
        var decoder = CommandDecoder(maxPayload: 4)
        var first = ByteBuffer(string: "PUB s 1000\r\n" + String(repeating: "x", count: 500))
        #expect(try decoder.next(&first) == .invalid(ReplayError(.payloadTooLarge, "payload of 1000 bytes is over the limit of 4 bytes; it was discarded")))
        #expect(try decoder.next(&first) == nil)
        #expect(first.readableBytes == 0, "nothing of the oversize payload is kept")
        var second = ByteBuffer(string: String(repeating: "x", count: 500) + "\r\nPING\r\n")
        #expect(try decoder.next(&second) == .command(.ping))
    }

    @Test func fatalFramingErrors() throws {
        #expect(throws: ReplayError(.lineTooLong, "control line longer than 16 bytes; closing")) {
            try decodeAll(String(repeating: "A", count: 40), maxLine: 16)
        }
        #expect(throws: ReplayError.self) { try decodeAll("PUB s 2\r\nabc\r\n") }
    }

    @Test func aPartialCommandWaitsForMoreBytes() throws {
        var decoder = CommandDecoder()
        var buffer = ByteBuffer(string: "PUB s 5\r\nhel")
        #expect(try decoder.next(&buffer) == nil)
        buffer.writeString("lo\r\n")
        #expect(try decoder.next(&buffer) == .command(.publish(stream: "s", payload: ByteBuffer(string: "hello"))))
    }

    /// NIO's verifier feeds the input byte by byte and in other splits, and checks the
    /// decoder leaves nothing behind.
    @Test func nioDecoderVerifier() throws {
        let input = ByteBuffer(string: "PUB a 3\r\nxyz\r\nSUB a s1 last=2\r\nPING\r\nFAIL a 2\r\nno\r\n")
        try ByteToMessageDecoderVerifier.verifyDecoder(
            inputOutputPairs: [
                (
                    input,
                    [
                        .command(.publish(stream: "a", payload: ByteBuffer(string: "xyz"))),
                        .command(.subscribe(stream: "a", sid: "s1", start: .last(2))),
                        .command(.ping),
                        .command(.fail(stream: "a", message: "no")),
                    ]
                )
            ],
            decoderFactory: { CommandDecoder() })
    }

    /// Random bytes, random splits: the decoder only ever returns commands, recoverable
    /// errors, or throws a ReplayError; it never crashes or loops.
    @Test(arguments: 0..<20 as Range<UInt64>)
    func randomInputNeverCrashesTheDecoder(seed: UInt64) {
        var random = SplitMix(seed: seed)
        let alphabet = Array("PUB SUB UNSUB CREATE FAIL PING 0123456789 =\r\n\r\nabc\u{0}\u{FF}".utf8)
        var decoder = CommandDecoder(maxLineLength: 64, maxPayload: 32)
        for _ in 0..<200 {
            var buffer = ByteBuffer(bytes: (0..<Int.random(in: 0...64, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
            do {
                var produced = 0
                while try decoder.next(&buffer) != nil {
                    produced += 1
                    #expect(produced < 10_000)
                }
            } catch {
                #expect(error.isFatal)
                decoder = CommandDecoder(maxLineLength: 64, maxPayload: 32)
            }
        }
    }

    /// `hash=on` goes with any SUB; a read-time filter still reads one stream only.
    @Test func hashOnGoesWithEverySubButAFilterStaysOnOneStream() throws {
        #expect(
            try decodeAll("SUB orders/* p1 hash=on\nSUB jobs g1 group=w hash=on\n") == [
                .command(.hashed(.subscribePattern(pattern: try StreamPattern.parse("orders/*").get(), sid: "p1", start: .all))),
                .command(.hashed(.subscribeGroup(stream: "jobs", sid: "g1", start: .all, options: GroupOptions(group: "w")))),
            ])
        for line in ["SUB orders/* p2 hash=on filter=1\n.\n", "SUB jobs g2 group=w hash=on filter=1\n.\n"] {
            guard case .invalid(let error)? = try decodeAll(line).first else {
                Issue.record("\(line) was taken")
                continue
            }
            #expect(error.message.contains("filter= is for a SUB of one stream"), "\(error.message)")
        }
    }
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

}
