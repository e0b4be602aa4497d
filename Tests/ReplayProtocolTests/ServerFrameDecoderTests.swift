import NIOCore
import NIOTestUtils
import ReplayProtocol
import Testing

/// The client's decoder of the server's byte stream, under NIO's verifier: every frame
/// kind, fed whole, byte by byte and in every other split, gives the same frames, and
/// nothing is left over or invented (a frame lost at a read boundary would look like a
/// subscription that never got its event).
@Suite("ServerFrameDecoder")
struct ServerFrameDecoderTests {
    static let frames: [ServerFrame] = [
        .hello(version: "1.0.0", maxPayload: 1_048_576),
        .ok,
        .published(sequence: 42),
        .error(ReplayError(.unknownStream, "no stream named 'x'; create it first")),
        .pong,
        .info(json: ByteBuffer(string: #"{"name":"s"}"#)),
        .list(json: ByteBuffer(string: "[]")),
        .event(stream: "s", sid: "a", sequence: 7, time: "2026-11-23T00:00:00.000Z", payload: ByteBuffer(string: "pay\r\nload")),
        .event(stream: "s", sid: "a", sequence: 8, time: "2026-11-23T00:00:00.000Z", payload: ByteBuffer()),
        .gap(stream: "s", sid: "a", from: 1, through: 6),
        .completed(stream: "s", sid: "a", lastSequence: 8),
        .failed(stream: "t", sid: "b", lastSequence: 3, message: "disk on fire"),
    ]

    @Test func nioDecoderVerifier() throws {
        var input = ByteBuffer()
        for frame in Self.frames { frame.write(into: &input) }
        try ByteToMessageDecoderVerifier.verifyDecoder(
            inputOutputPairs: [(input, Self.frames)],
            decoderFactory: { ServerFrameDecoder() })
    }

    /// The replies and event of one round of the reused-sid test, as the daemon writes
    /// them: three `+OK`s in one write, the event in another.
    @Test func repliesThenAnEventAcrossWrites() throws {
        let replies = [ServerFrame.ok, .ok, .ok]
        let event = ServerFrame.event(stream: "s", sid: "a", sequence: 1, time: "2026-11-23T00:00:00.000Z", payload: ByteBuffer(string: "round 1"))
        var first = ByteBuffer()
        for frame in replies { frame.write(into: &first) }
        var second = ByteBuffer()
        event.write(into: &second)
        try ByteToMessageDecoderVerifier.verifyDecoder(
            inputOutputPairs: [(first, replies), (second, [event])],
            decoderFactory: { ServerFrameDecoder() })
    }
}
