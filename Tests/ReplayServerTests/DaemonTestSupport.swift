import NIOCore
import ReplayProtocol
import ReplayTesting
import Testing

extension WireClient {
    /// Publishes every payload pipelined (one write), then reads their acknowledgements.
    func publish(_ stream: String, _ payloads: [String]) async throws -> [UInt64] {
        var buffer = ByteBuffer()
        for payload in payloads {
            ClientCommand.publish(stream: stream, payload: ByteBuffer(string: payload)).write(into: &buffer)
        }
        try await send(buffer)
        var sequences: [UInt64] = []
        for _ in payloads {
            let frame = try await expectFrame()
            guard case .published(let sequence) = frame else { throw TestFailure("expected +OK <seq>, got \(frame)") }
            sequences.append(sequence)
        }
        return sequences
    }

    /// Subscribes and reads its +OK.
    func subscribe(_ stream: String, sid: String, start: StartPosition = .all) async throws {
        try await send(.subscribe(stream: stream, sid: sid, start: start))
        let reply = try await expectFrame()
        guard reply == .ok else { throw TestFailure("SUB \(stream) \(sid) answered \(reply)") }
    }

    /// Reads frames until `count` events arrived; returns (sequence, payload) pairs and
    /// anything else that came (gaps, terminal frames).
    func events(_ count: Int) async throws -> [(UInt64, String)] {
        var out: [(UInt64, String)] = []
        while out.count < count {
            let frame = try await expectFrame()
            guard case .event(_, _, let sequence, _, let payload, _, _, _) = frame else {
                throw TestFailure("expected an event, got \(frame)")
            }
            out.append((sequence, String(buffer: payload)))
        }
        return out
    }
}
