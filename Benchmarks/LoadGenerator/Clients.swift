import Foundation
import NIOCore
import ReplayModel
import ReplayProtocol

/// What a scenario asks of a system, so that replay and Redis run the same code path.
protocol BenchClient: AnyObject {
    /// Queues one publish (call `flush` to send).
    func queuePublish(_ stream: String, _ payload: ByteBuffer)
    /// Queues one publish with replay's checks (expected sequence, producer stamp).
    func queuePublish(_ stream: String, _ payload: ByteBuffer, checks: AppendConditions) throws
    func flush() throws
    /// Reads one publish acknowledgement.
    func readAck() throws
    /// Starts reading `stream`: from the first event (`fromStart`) or only new ones.
    func subscribe(_ stream: String, fromStart: Bool) throws
    /// The next events' payloads for the subscription (blocking until at least one).
    func nextEvents() throws -> [ByteBuffer]
    func ping() throws
}

/// replay's protocol: PUB/+OK, SUB then pushed EVENT frames.
final class ReplayBenchClient: BenchClient {
    let socket: BufferedSocket
    private var decoder = ServerFrameDecoder()

    init(path: String) throws {
        socket = try BufferedSocket(path: path)
    }

    func nextFrame() throws -> ServerFrame { try frame() }

    private func frame() throws -> ServerFrame {
        while true {
            if let frame = try decoder.next(&socket.input) {
                socket.discardRead()
                if case .hello = frame { continue }
                return frame
            }
            try socket.fill()
        }
    }

    func queuePublish(_ stream: String, _ payload: ByteBuffer) {
        socket.write { ClientCommand.publish(stream: stream, payload: payload).write(into: &$0) }
    }

    func queuePublish(_ stream: String, _ payload: ByteBuffer, checks: AppendConditions) {
        socket.write { ClientCommand.publishChecked(stream: stream, payload: payload, checks: checks).write(into: &$0) }
    }

    func flush() throws { try socket.flush() }

    func readAck() throws {
        let reply = try frame()
        guard case .published = reply else { throw BenchError("expected +OK <seq>, got \(reply)") }
    }

    func subscribe(_ stream: String, fromStart: Bool) throws {
        socket.write { ClientCommand.subscribe(stream: stream, sid: "b", start: fromStart ? .all : .new).write(into: &$0) }
        try socket.flush()
        let reply = try frame()
        guard reply == .ok else { throw BenchError("SUB answered \(reply)") }
    }

    func nextEvents() throws -> [ByteBuffer] {
        var events: [ByteBuffer] = []
        repeat {
            switch try frame() {
            case .event(_, _, _, _, let payload, _, _, _): events.append(payload)
            case let other: throw BenchError("unexpected \(other)")
            }
        } while socket.input.readableBytes > 0 && events.count < 1024
        return events
    }

    func ping() throws {
        socket.write { ClientCommand.ping.write(into: &$0) }
        try socket.flush()
        guard try frame() == .pong else { throw BenchError("no PONG") }
    }
}

/// Redis Streams through a minimal RESP client: XADD … MAXLEN, XRANGE paging for history,
/// XREAD BLOCK for live events.
final class RedisBenchClient: BenchClient {
    let socket: BufferedSocket
    let maxLength: Int
    private var stream = ""
    private var lastID = "0-0"
    private var live = false

    init(path: String, maxLength: Int) throws {
        socket = try BufferedSocket(path: path)
        self.maxLength = maxLength
    }

    func command(_ words: [ByteBuffer]) {
        socket.write { out in
            out.writeString("*\(words.count)\r\n")
            for var word in words {
                out.writeString("$\(word.readableBytes)\r\n")
                out.writeBuffer(&word)
                out.writeString("\r\n")
            }
        }
    }

    indirect enum Reply {
        case simple(String), error(String), integer(Int), bulk(ByteBuffer?), array([Reply]?)
    }

    private func line() throws -> String {
        while true {
            let view = socket.input.readableBytesView
            if let end = view.firstIndex(of: UInt8(ascii: "\n")) {
                let length = end - view.startIndex
                let text = socket.input.readString(length: length - 1)!
                socket.input.moveReaderIndex(forwardBy: 2)
                return text
            }
            try socket.fill()
        }
    }

    func reply() throws -> Reply {
        let header = try line()
        let rest = String(header.dropFirst())
        switch header.first {
        case "+": return .simple(rest)
        case "-": return .error(rest)
        case ":": return .integer(Int(rest) ?? 0)
        case "$":
            let size = Int(rest) ?? -1
            guard size >= 0 else { return .bulk(nil) }
            while socket.input.readableBytes < size + 2 { try socket.fill() }
            let bytes = socket.input.readSlice(length: size)!
            socket.input.moveReaderIndex(forwardBy: 2)
            return .bulk(bytes)
        case "*":
            let count = Int(rest) ?? -1
            guard count >= 0 else { return .array(nil) }
            return .array(try (0..<count).map { _ in try reply() })
        default: throw BenchError("bad RESP line: \(header)")
        }
    }

    func queuePublish(_ stream: String, _ payload: ByteBuffer, checks: AppendConditions) throws {
        throw BenchError("Redis 7 has no expected-sequence or idempotent-producer XADD")
    }

    func queuePublish(_ stream: String, _ payload: ByteBuffer) {
        command(["XADD", stream, "MAXLEN", "~", "\(maxLength)", "*", "p"].map { ByteBuffer(string: $0) } + [payload])
    }

    func flush() throws { try socket.flush() }

    func readAck() throws {
        guard case .bulk = try reply() else { throw BenchError("XADD failed") }
        socket.discardRead()
    }

    func subscribe(_ stream: String, fromStart: Bool) throws {
        self.stream = stream
        live = !fromStart
        lastID = fromStart ? "-" : "$"
    }

    func nextEvents() throws -> [ByteBuffer] {
        while true {
            if live {
                command(["XREAD", "BLOCK", "0", "COUNT", "512", "STREAMS", stream, lastID].map { ByteBuffer(string: $0) })
            } else {
                let start = lastID == "-" ? "-" : "(" + lastID
                command(["XRANGE", stream, start, "+", "COUNT", "512"].map { ByteBuffer(string: $0) })
            }
            try socket.flush()
            var entries: [Reply] = []
            switch try reply() {
            case .array(let items?) where live:
                // [[stream, [[id, [field, value]], …]]]
                if case .array(let pair?) = items.first, pair.count == 2, case .array(let list?) = pair[1] { entries = list }
            case .array(let items?): entries = items
            case .array(nil): continue
            case let other: throw BenchError("unexpected reply \(other)")
            }
            socket.discardRead()
            if entries.isEmpty {
                if live { continue }
                return []
            }
            var payloads: [ByteBuffer] = []
            for entry in entries {
                guard case .array(let parts?) = entry, parts.count == 2, case .bulk(let id?) = parts[0],
                    case .array(let fields?) = parts[1], fields.count == 2, case .bulk(let value?) = fields[1]
                else { continue }
                lastID = String(buffer: id)
                payloads.append(value)
            }
            return payloads
        }
    }

    /// Sends an XREAD BLOCK and does not read the answer (an idle live subscriber).
    func startBlockingRead() {
        command(["XREAD", "BLOCK", "0", "COUNT", "512", "STREAMS", stream, "$"].map { ByteBuffer(string: $0) })
        try? socket.flush()
    }

    /// Asks for a page of history and does not read it (a stopped catch-up subscriber).
    func startRangeRead() {
        command(["XRANGE", stream, "-", "+"].map { ByteBuffer(string: $0) })
        try? socket.flush()
    }

    func ping() throws {
        command([ByteBuffer(string: "PING")])
        try socket.flush()
        guard case .simple("PONG") = try reply() else { throw BenchError("no PONG") }
    }
}
