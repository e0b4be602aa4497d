import ReplayProtocol
import Testing

/// Every PUB is a `ClientCommand` passed from the decoder to its connection, so the enum's
/// size is paid per event: a case that would make it larger than a checked publish (a
/// group's options made it 145 bytes) must be boxed (`indirect`).
@Suite("Client commands")
struct ClientCommandSizeTests {
    @Test func aCommandIsAPublishsSize() {
        #expect(MemoryLayout<ClientCommand>.size <= 96)
    }
}
