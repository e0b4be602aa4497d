import NIOCore

/// Where a subscription's frames go: the connection's socket, with the wait for room in
/// it that makes a slow reader cost its position rather than a buffer.
protocol FrameOutput: Sendable {
    func write(_ buffer: ByteBuffer) async throws
    /// Several buffers in one write (one `writev` where they fit).
    func writeMany(_ buffers: [ByteBuffer]) async throws
}

/// A plain subscription's output: the channel's asynchronous writer, which suspends while
/// the socket is not writable.
struct SubscriberOutput: FrameOutput {
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    func write(_ buffer: ByteBuffer) async throws {
        try await outbound.write(buffer)
    }

    func writeMany(_ buffers: [ByteBuffer]) async throws {
        try await outbound.write(contentsOf: buffers)
    }
}

/// A group member's output: through the connection's router on its event loop, so that
/// the writer's thread can send a hand-out it framed itself (`send`) in order with what
/// the member's task writes, with no hop through the task. A task's write returns once the
/// bytes reached the socket; the writer's sends are bounded by the member's `max_pending`
/// and are made only while the socket has room (`isWritable`).
struct MemberOutput: FrameOutput {
    let router: RouterHandle

    var isWritable: Bool { router.isWritable }

    func write(_ buffer: ByteBuffer) async throws {
        try await writeMany([buffer])
    }

    func writeMany(_ buffers: [ByteBuffer]) async throws {
        let promise = router.makePromise(of: Void.self)
        router.write(buffers, promise: promise)
        try await promise.futureResult.get()
    }

    /// From any thread, without waiting for the write.
    func send(_ buffer: ByteBuffer) {
        router.write([buffer], promise: nil)
    }
}
