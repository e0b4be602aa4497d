import Testing

@testable import ReplayStore

/// Every PUB copies its `WriteRequest` into the writer's queue and into its batch, so the
/// enum's size is paid per event (it once grew to 328 bytes, and the daemon's CPU for
/// pipelined publishing with it). A case that makes it larger must be boxed (`indirect`).
@Suite("Write requests")
struct WriteRequestSizeTests {
    @Test func aWriteRequestStaysSmall() {
        #expect(MemoryLayout<WriteRequest>.size <= 128)
    }
}
