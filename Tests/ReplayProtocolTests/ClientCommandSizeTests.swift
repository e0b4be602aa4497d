import Testing

@testable import ReplayProtocol

/// Every PUB is a `ClientCommand` passed from the decoder to its connection, so the enum's
/// size is paid per event: a case that would make it larger than a checked publish (a
/// group's options made it 145 bytes) must be boxed (`indirect`).
@Suite("Client commands")
struct ClientCommandSizeTests {
    @Test func aCommandIsAPublishsSize() {
        #expect(MemoryLayout<ClientCommand>.size <= 96)
    }

    /// A PUB's line is parsed into a command awaiting its payload, inside the parser's
    /// answer and, when the payload comes in a later read, the decoder's state: each is
    /// copied per event. With `CREATE`'s options inline they were 152 and 160 bytes, copied
    /// by `memcpy`: with eight pipelined publishers, `memcpy` on the event loops was 3.1 %
    /// of the daemon's samples, 1.2 % once boxed.
    @Test func whatAPublishIsParsedIntoIsNoLargerThanTheCommand() {
        #expect(MemoryLayout<CommandParser.AwaitingPayload>.size <= 72)
        #expect(MemoryLayout<CommandParser.Parsed>.size <= 96)
        #expect(MemoryLayout<CommandDecoder.State>.size <= 80)
    }
}
