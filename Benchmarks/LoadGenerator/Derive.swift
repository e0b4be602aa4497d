import Foundation
import Histogram
import NIOCore
import ReplayModel
import ReplayProtocol
import ReplaySync

/// `derive`: derived streams against plain publishing and against the same computation as
/// an outside worker (a durable consumer that publishes its outputs, then acknowledges), in
/// one run of one daemon each:
/// - a map/filter derivation live behind one publisher paced at 5,000 events/s: the
///   input-to-output latency, beside the same events' publish-to-subscriber latency;
/// - a backlog (1,000,000 events at scale 1) computed by a map/filter derivation, by a scan
///   over 1,000 keys, and by the outside worker: input events per second each;
/// - a SIGKILL halfway through the derivation's and the worker's catch-up: the outputs each
///   has twice afterwards.
extension Scenarios {
    func derive() throws -> [Figure] {
        guard let replay = system as? ReplaySystem else { return [] }
        // The SIGKILLs below cut the clients' connections: a write then fails, it must not
        // end the bench.
        signal(SIGPIPE, SIG_IGN)
        return try deriveLive() + deriveBacklog(replay)
    }

    /// `derive-live`: the live map/filter beside plain publishing, without the backlog: the
    /// one to repeat when comparing builds on latency.
    func deriveLiveOnly() throws -> [Figure] {
        guard system is ReplaySystem else { return [] }
        return try deriveLive()
    }

    /// `{"t": <send time, ns>, "v": i, "k": i % keys}`.
    private func order(_ i: Int, stamp: UInt64 = 0, keys: Int = 1_000) -> ByteBuffer {
        ByteBuffer(string: #"{"t":\#(stamp),"v":\#(i),"k":"k\#(i % keys)"}"#)
    }

    private func deriveLive() throws -> [Figure] {
        let admin = try ReplayBenchClient(path: system.socketPathForDerive)
        try admin.derive("live-out", DerivationSpec(inputs: ["live-in"], program: "select(.v >= 0) | {t, v}"))
        let rate = 5_000
        let count = max(2_000, Int(Double(rate) * 10 * scale))
        let derived = try ReplayBenchClient(path: system.socketPathForDerive)
        try derived.subscribe("live-out", fromStart: true)
        let plain = try ReplayBenchClient(path: system.socketPathForDerive)
        try plain.subscribe("live-in", fromStart: true)
        var histograms: [Histogram<UInt64>] = []
        let readers = [derived, plain].map { client in
            Thread.detachNewThreadWithResult {
                var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000)
                var received = 0
                while received < count {
                    for payload in (try? client.nextEvents()) ?? [] {
                        received += 1
                        if let sent = Self.stamp(in: payload) { _ = histogram.record(now() &- sent) }
                    }
                }
                return histogram
            }
        }
        let publisher = try ReplayBenchClient(path: system.socketPathForDerive)
        let start = now()
        var sent = 0
        while sent < count {
            // Paced: as many as are due by now, then the acknowledgements.
            let due = min(count, Int(Double(now() - start) / 1e9 * Double(rate)) + 1)
            if due <= sent {
                usleep(200)
                continue
            }
            for i in sent..<due { publisher.queuePublish("live-in", order(i, stamp: now())) }
            try publisher.flush()
            for _ in sent..<due { try publisher.readAck() }
            sent = due
        }
        for reader in readers { histograms.append(reader.wait()) }
        let seconds = Double(now() - start) / 1e9
        func figure(_ name: String, _ histogram: Histogram<UInt64>) -> Figure {
            Figure(
                scenario: name, system: system.name, value: Double(count) / seconds, unit: "events/s",
                p50: Double(histogram.valueAtPercentile(50)) / 1000, p99: Double(histogram.valueAtPercentile(99)) / 1000,
                serverRSS: system.residentBytes)
        }
        return [
            figure("derive: map/filter live at 5,000/s, input to output", histograms[0]),
            figure("derive: plain publish at 5,000/s, to subscriber", histograms[1]),
        ]
    }

    private func deriveBacklog(_ replay: ReplaySystem) throws -> [Figure] {
        let count = n(1_000_000)
        let publisher = try ReplayBenchClient(path: replay.socketPathForDerive)
        let start = now()
        var i = 0
        while i < count {
            let batch = min(1_000, count - i)
            for j in i..<(i + batch) { publisher.queuePublish("backlog", order(j)) }
            try publisher.flush()
            for _ in 0..<batch { try publisher.readAck() }
            i += batch
        }
        let published = Figure(
            scenario: "derive: backlog published, pipelined x1", system: system.name, value: Double(count) / (Double(now() - start) / 1e9),
            unit: "events/s", serverRSS: system.residentBytes)

        let admin = try ReplayBenchClient(path: replay.socketPathForDerive)
        let filter = "select(.v % 2 == 0) | {v}"
        var figures = [published]
        var started = now()
        try admin.derive("evens", DerivationSpec(inputs: ["backlog"], program: filter))
        try admin.waitForDerivation("evens", input: "backlog", at: UInt64(count))
        figures.append(catchUp("derive: catch-up map/filter", count, since: started))

        // A running sum over 1,000 keys: keyed (a state per key), and as one object of every
        // key, which jq copies whole at each event.
        started = now()
        try admin.derive("sums", DerivationSpec(inputs: ["backlog"], program: ".state + .event.v", scan: "0", scanKey: ".k"))
        try admin.waitForDerivation("sums", input: "backlog", at: UInt64(count))
        figures.append(catchUp("derive: catch-up scan over 1,000 keys, --scan-key", count, since: started))
        started = now()
        let scan = #".event as $e | (.state | .[$e.k] += $e.v) as $s | {state: $s, emit: [{k: $e.k, total: $s[$e.k]}]}"#
        try admin.derive("totals", DerivationSpec(inputs: ["backlog"], program: scan, scan: "{}"))
        try admin.waitForDerivation("totals", input: "backlog", at: UInt64(count))
        figures.append(catchUp("derive: catch-up scan over 1,000 keys, one object", count, since: started))

        started = now()
        let worker = OutsideWorker(socket: replay.socketPathForDerive, input: "backlog", output: "worker-evens")
        try worker.run(through: UInt64(count))
        figures.append(catchUp("derive: the same map/filter as an outside worker", count, since: started))

        // The same worker one event at a time (publish, then acknowledge), as most are written.
        let small = max(1_000, count / 50)
        started = now()
        let careful = OutsideWorker(socket: replay.socketPathForDerive, input: "backlog", output: "worker-one", consumer: "one", oneAtATime: true)
        try careful.run(through: UInt64(small))
        figures.append(catchUp("derive: the same as a worker, one event at a time", small, since: started))

        // Three SIGKILLs while each computes: the outputs each then has twice.
        try admin.derive("evens-killed", DerivationSpec(inputs: ["backlog"], program: filter))
        for kill in 1...3 {
            let monitor = try ReplayBenchClient(path: replay.socketPathForDerive)
            try monitor.waitForDerivation("evens-killed", input: "backlog", at: UInt64(count * kill / 4), orMore: true)
            _ = try replay.killAndRestart()
        }
        try ReplayBenchClient(path: replay.socketPathForDerive).waitForDerivation("evens-killed", input: "backlog", at: UInt64(count))
        for kill in 1...3 {
            let worker = OutsideWorker(socket: replay.socketPathForDerive, input: "backlog", output: "worker-killed", consumer: "killed", oneAtATime: true)
            let running = Thread.detachNewThreadWithResult { (try? worker.run(through: UInt64(small))) != nil }
            while worker.acknowledged < UInt64(small * kill / 4) { usleep(500) }
            _ = try replay.killAndRestart()
            _ = running.wait()
        }
        let resumed = OutsideWorker(socket: replay.socketPathForDerive, input: "backlog", output: "worker-killed", consumer: "killed", oneAtATime: true)
        try resumed.run(through: UInt64(small))
        for (name, stream, expected) in [("derived", "evens-killed", count / 2), ("worker", "worker-killed", small / 2)] {
            let reader = try ReplayBenchClient(path: replay.socketPathForDerive)
            figures.append(
                Figure(
                    scenario: "derive: duplicates after 3 SIGKILLs, \(name)", system: system.name,
                    value: Double(try reader.duplicates(in: stream, expected: expected)), unit: "outputs", serverRSS: 0))
        }
        return figures
    }

    private func catchUp(_ name: String, _ count: Int, since start: UInt64) -> Figure {
        Figure(
            scenario: name, system: system.name, value: Double(count) / (Double(now() - start) / 1e9), unit: "input events/s",
            serverRSS: system.residentBytes)
    }

    /// The send time at the start of a payload `{"t":…`.
    static func stamp(in payload: ByteBuffer) -> UInt64? {
        let view = payload.readableBytesView
        guard let colon = view.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        var value: UInt64 = 0
        for byte in view[(colon + 1)...] {
            guard byte >= 48, byte <= 57 else { break }
            value = value * 10 + UInt64(byte - 48)
        }
        return value
    }
}

/// The computation a derived stream replaces, as teams write it: a durable consumer reads a
/// page of events, publishes each one's output, waits for those acknowledgements, then
/// acknowledges its position. A crash between the two writes gives the outputs again.
final class OutsideWorker {
    let socket: String
    let input: String
    let output: String
    let consumer: String
    /// Publish each output and acknowledge each event before the next, rather than a page
    /// at a time.
    let oneAtATime: Bool
    /// The last input event acknowledged (read by the thread that kills the daemon).
    private let last = Locked<UInt64>(0)
    var acknowledged: UInt64 { last.value }

    init(socket: String, input: String, output: String, consumer: String = "worker", oneAtATime: Bool = false) {
        self.socket = socket
        self.input = input
        self.output = output
        self.consumer = consumer
        self.oneAtATime = oneAtATime
    }

    /// Works until its position reaches `sequence`, or its connection fails.
    func run(through sequence: UInt64) throws {
        let reader = try ReplayBenchClient(path: socket)
        let writer = try ReplayBenchClient(path: socket)
        reader.socket.write {
            ClientCommand.windowed(.subscribeDurable(stream: input, sid: "w", start: .all, consumer: consumer), window: 4_096).write(into: &$0)
        }
        try reader.flush()
        guard try reader.nextFrame() == .ok else { throw BenchError("the worker's SUB was refused") }
        while acknowledged < sequence {
            var position: UInt64 = 0
            var events: [(UInt64, ByteBuffer)] = []
            repeat {
                switch try reader.nextFrame() {
                case .event(_, _, let sequence, _, let payload, _, _, _): events.append((sequence, payload))
                case .ok: continue
                case let other: throw BenchError("the worker read \(other)")
                }
            } while reader.socket.input.readableBytes > 0 && (events.last?.0 ?? 0) < sequence
            guard !events.isEmpty else { continue }
            if oneAtATime {
                let target = sequence
                for (sequence, payload) in events where sequence <= target {
                    if let v = Self.value(payload), v % 2 == 0 {
                        writer.queuePublish(output, ByteBuffer(string: #"{"v":\#(v)}"#))
                        try writer.flush()
                        try writer.readAck()
                    }
                    reader.socket.write { ClientCommand.ack(sid: "w", sequence: sequence).write(into: &$0) }
                    try reader.flush()
                    last.withLock { $0 = sequence }
                }
                reader.socket.write { ClientCommand.more(sid: "w", count: events.count).write(into: &$0) }
                try reader.flush()
                continue
            }
            var published = 0
            for (sequence, payload) in events {
                position = sequence
                guard let v = Self.value(payload) else { continue }
                if v % 2 == 0 {
                    writer.queuePublish(output, ByteBuffer(string: #"{"v":\#(v)}"#))
                    published += 1
                }
            }
            try writer.flush()
            for _ in 0..<published { try writer.readAck() }
            reader.socket.write { ClientCommand.ack(sid: "w", sequence: position).write(into: &$0) }
            reader.socket.write { ClientCommand.more(sid: "w", count: events.count).write(into: &$0) }
            try reader.flush()
            last.withLock { $0 = position }
        }
    }
}

extension OutsideWorker {
    /// The map/filter `select(.v % 2 == 0) | {v}`'s input, decoded as a worker would.
    static func value(_ payload: ByteBuffer) -> Int? {
        (try? JSONSerialization.jsonObject(with: Data(payload.readableBytesView)) as? [String: Any])?["v"] as? Int
    }
}

extension ReplayBenchClient {
    func derive(_ stream: String, _ spec: DerivationSpec) throws {
        socket.write { ClientCommand.derive(stream: stream, definition: spec.json, options: DeriveOptions(capacity: .unlimited)).write(into: &$0) }
        try flush()
        let reply = try nextFrame()
        guard reply == .ok else { throw BenchError("DERIVE \(stream) answered \(reply)") }
    }

    /// Polls DERIVATIONS until the derivation has computed `input` up to `sequence`.
    func waitForDerivation(_ stream: String, input: String, at sequence: UInt64, orMore: Bool = false) throws {
        while true {
            socket.write { ClientCommand.derivations.write(into: &$0) }
            try flush()
            guard case .list(let json) = try nextFrame() else { throw BenchError("DERIVATIONS answered otherwise") }
            let all = try JSONDecoder().decode([DerivationDescription].self, from: Data(json.readableBytesView))
            guard let found = all.first(where: { $0.stream == stream }) else { throw BenchError("no derivation \(stream)") }
            if found.status == .stopped { throw BenchError("\(stream) stopped: \(found.error ?? "")") }
            let position = found.positions[input] ?? 0
            if position == sequence || (orMore && position >= sequence) { return }
            usleep(5_000)
        }
    }

    /// Reads a stream whose outputs are `{"v":…}` and counts those seen more than once.
    func duplicates(in stream: String, expected: Int) throws -> Int {
        socket.write { ClientCommand.info(stream: stream).write(into: &$0) }
        try flush()
        guard case .info(let json) = try nextFrame() else { throw BenchError("INFO answered otherwise") }
        let total = Int(try JSONDecoder().decode(StreamDescription.self, from: Data(json.readableBytesView)).lastSeq)
        try subscribe(stream, fromStart: true)
        var seen = Set<Int>()
        var received = 0
        var duplicates = 0
        while received < total {
            for payload in try nextEvents() {
                received += 1
                let text = String(buffer: payload)
                let v = Int(text.dropFirst(5).dropLast()) ?? -1
                if !seen.insert(v).inserted { duplicates += 1 }
            }
        }
        return duplicates
    }
}

extension SystemUnderTest {
    /// The socket of a replay daemon (derived streams are replay's alone).
    var socketPathForDerive: String { (self as? ReplaySystem)?.socketPath ?? "" }
}

extension Thread {
    /// Runs `body` on a thread of its own; `wait` returns what it returned.
    static func detachNewThreadWithResult<T>(_ body: @escaping () -> T) -> ThreadResult<T> {
        let result = ThreadResult<T>()
        // The bench's clients are plain classes, each used by the one thread it is given to.
        nonisolated(unsafe) let work = body
        Thread.detachNewThread {
            result.value = work()
            result.done.signal()
        }
        return result
    }
}

final class ThreadResult<T>: @unchecked Sendable {
    var value: T?
    let done = DispatchSemaphore(value: 0)

    func wait() -> T {
        done.wait()
        return value!
    }
}
