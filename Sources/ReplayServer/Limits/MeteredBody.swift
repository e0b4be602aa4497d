import Hummingbird
import NIOCore

/// A request body that reports its bytes as they arrive: how a body whose length was not
/// announced (chunked) is charged against its client's byte rate.
struct MeteredBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: RequestBody
    let charge: @Sendable (Int) -> Void

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let charge: @Sendable (Int) -> Void

        mutating func next() async throws -> ByteBuffer? {
            guard let buffer = try await base.next() else { return nil }
            charge(buffer.readableBytes)
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator(), charge: charge)
    }
}
