import Dispatch
import Foundation
import Histogram
import NIOCore
import ReplayModel
import ReplayProtocol
import ReplaySync

/// One measured figure, printed as a table row and as a JSON line.
struct Figure {
    var scenario: String
    var system: String
    var value: Double
    var unit: String
    var p50: Double?
    var p99: Double?
    var serverRSS: Int
}

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

/// A payload of `size` bytes that starts with its send time (for latency).
func payload(size: Int, stamp: UInt64 = 0) -> ByteBuffer {
    var buffer = ByteBuffer()
    buffer.writeInteger(stamp)
    buffer.writeRepeatingByte(0x78, count: max(0, size - 8))
    return buffer
}

struct Scenarios {
    let system: any SystemUnderTest
    let payloadSize: Int
    let scale: Double

    func n(_ full: Int) -> Int { max(100, Int(Double(full) * scale)) }

    /// One publisher, one publish at a time, each acknowledged.
    func publishSequential() throws -> [Figure] {
        let client = try system.client()
        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000_000)
        let count = n(5_000)
        let start = now()
        for _ in 0..<count {
            let sent = now()
            client.queuePublish("seq", payload(size: payloadSize))
            try client.flush()
            try client.readAck()
            _ = histogram.record(now() - sent)
        }
        let seconds = Double(now() - start) / 1e9
        return [
            Figure(
                scenario: "publish-seq", system: system.name, value: Double(count) / seconds, unit: "events/s",
                p50: Double(histogram.valueAtPercentile(50)) / 1000, p99: Double(histogram.valueAtPercentile(99)) / 1000,
                serverRSS: system.residentBytes)
        ]
    }

    /// What each publish of `publishPipelined` carries.
    enum Checks: String {
        case none = ""
        /// `expect=` the stream's last sequence (each connection writes a stream of its own).
        case expect = " expect="
        /// An idempotent producer's stamp (one producer per connection).
        case producer = " producer"
    }

    /// `connections` publishers, `window` publishes in flight on each. With `checks`, or
    /// with `ownStreams`, each connection publishes to a stream of its own.
    func publishPipelined(connections: Int, window: Int = 100, checks: Checks = .none, ownStreams: Bool = false) throws -> Figure {
        let perConnection = n(400_000) / connections
        let clients = try (0..<connections).map { _ in try system.client() }
        let group = DispatchGroup()
        let failures = Locked(0)
        let size = payloadSize
        let start = now()
        for (index, client) in clients.enumerated() {
            group.enter()
            let unsafeClient = UnsafeTransfer(client)
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let client = unsafeClient.value
                    var acked = 0
                    var sent = 0
                    let stream =
                        switch checks {
                        case .none: ownStreams ? "own\(index)" : "pipe\(index % 2)"
                        case .expect: "expecting\(index)"
                        case .producer: "producing\(index)"
                        }
                    let producer = "bench\(index)"
                    while acked < perConnection {
                        while sent < perConnection && sent - acked < window {
                            switch checks {
                            case .none:
                                client.queuePublish(stream, payload(size: size))
                            case .expect:
                                try client.queuePublish(stream, payload(size: size), checks: AppendConditions(expectedLastSequence: UInt64(sent)))
                            case .producer:
                                try client.queuePublish(
                                    stream, payload(size: size),
                                    checks: AppendConditions(producer: ProducerStamp(id: producer, epoch: 0, sequence: UInt64(sent))))
                            }
                            sent += 1
                        }
                        try client.flush()
                        try client.readAck()
                        acked += 1
                    }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        group.wait()
        guard failures.value == 0 else { throw BenchError("a publisher failed") }
        let seconds = Double(now() - start) / 1e9
        let variant = checks == .none && ownStreams ? " own streams" : checks.rawValue
        return Figure(
            scenario: "publish-pipelined x\(connections)\(variant)", system: system.name,
            value: Double(perConnection * connections) / seconds, unit: "events/s", serverRSS: system.residentBytes)
    }

    func fill(_ stream: String, count: Int) throws {
        let client = try system.client()
        var acked = 0
        var sent = 0
        while acked < count {
            while sent < count && sent - acked < 1000 {
                client.queuePublish(stream, payload(size: payloadSize))
                sent += 1
            }
            try client.flush()
            try client.readAck()
            acked += 1
        }
    }

    /// Retained events read from the start, by 1 and by 10 subscribers at once.
    func catchUp() throws -> [Figure] {
        let count = n(1_000_000)
        try fill("history", count: count)
        var figures: [Figure] = []
        for readers in [1, 10] {
            let clients = try (0..<readers).map { _ in try system.client() }
            let group = DispatchGroup()
            let start = now()
            for client in clients {
                group.enter()
                let unsafeClient = UnsafeTransfer(client)
                Thread.detachNewThread {
                    defer { group.leave() }
                    let client = unsafeClient.value
                    var received = 0
                    do {
                        try client.subscribe("history", fromStart: true)
                        while received < count {
                            let batch = try client.nextEvents()
                            if batch.isEmpty { break }
                            received += batch.count
                        }
                    } catch {}
                }
            }
            group.wait()
            let seconds = Double(now() - start) / 1e9
            figures.append(
                Figure(
                    scenario: "catch-up x\(readers)", system: system.name,
                    value: Double(count * readers) / seconds, unit: "events/s", serverRSS: system.residentBytes))
        }
        return figures
    }

    /// One pipelined publisher, `subscribers` live subscribers: deliveries/s flat out, and
    /// publish-to-delivery latency at `rate` events/s.
    func fanOut(subscribers: Int, rate: Int = 10_000) throws -> [Figure] {
        var figures: [Figure] = []
        for (label, limit) in [("", 0), (" @\(rate)/s", rate)] {
            let count = limit == 0 ? n(50_000) : max(1_000, Int(Double(rate) * 3 * scale))
            let stream = "fan\(subscribers)\(limit)"
            let histogram = Locked(Histogram<UInt64>(highestTrackableValue: 60_000_000_000))
            let ready = DispatchGroup()
            let done = DispatchGroup()
            let delivered = Locked(0)
            for _ in 0..<subscribers {
                let client = UnsafeTransfer(try system.subscriberClient())
                ready.enter()
                done.enter()
                Thread.detachNewThread {
                    defer { done.leave() }
                    var received = 0
                    do {
                        try client.value.subscribe(stream, fromStart: false)
                        ready.leave()
                        while received < count {
                            let batch = try client.value.nextEvents()
                            let arrival = now()
                            histogram.withLock { h in
                                for var event in batch { _ = h.record(arrival - (event.readInteger(as: UInt64.self) ?? arrival)) }
                            }
                            received += batch.count
                        }
                    } catch {}
                    delivered.withLock { $0 += received }
                }
            }
            ready.wait()
            if system.name == "redis" { usleep(200_000) }  // XREAD BLOCK must be parked before the first XADD
            let publisher = try system.publisherClient()
            let start = now()
            try publishPaced(publisher, stream, count: count, rate: limit, from: start)
            done.wait()
            let seconds = Double(now() - start) / 1e9
            let h = histogram.value
            figures.append(
                Figure(
                    scenario: "fan-out x\(subscribers)\(label)", system: system.name,
                    value: Double(delivered.value) / seconds, unit: "deliveries/s",
                    p50: Double(h.valueAtPercentile(50)) / 1000, p99: Double(h.valueAtPercentile(99)) / 1000,
                    serverRSS: system.residentBytes))
        }
        return figures
    }
}

extension Scenarios {
    /// Publishes `count` events to `stream`, each stamped with its send time, with up to
    /// 100 in flight. Flat out (`rate` 0), every publish is sent as soon as the window
    /// allows; paced, publish `i` is due at `start + i/rate`, and the publisher reads
    /// acknowledgements only while nothing is due, so it keeps the rate.
    func publishPaced(_ publisher: any BenchClient, _ stream: String, count: Int, rate: Int, from start: UInt64) throws {
        var (sent, acked) = (0, 0)
        let due = { (index: Int) in rate == 0 ? 0 : start + UInt64(index) * 1_000_000_000 / UInt64(rate) }
        while acked < count {
            while sent < count, sent - acked < 100, due(sent) <= now() {
                publisher.queuePublish(stream, payload(size: payloadSize, stamp: now()))
                sent += 1
            }
            try publisher.flush()
            if sent > acked {
                try publisher.readAck()
                acked += 1
            } else {
                // Sleep rather than spin: a spinning publisher would take one of the two
                // cores from the server and the readers it measures.
                // One reading of the clock: a second one, later, could pass the due time and
                // make the difference negative (it did, and crashed the load generator).
                let (next, current) = (due(sent), now())
                let wait = next > current ? next - current : 0
                if wait > 0 { usleep(UInt32(max(1, wait / 1000))) }
            }
        }
    }
}

extension Scenarios {
    /// A store holding `n(10M)` events: start-up time, then memory with 1,000 idle
    /// subscribers, then with one subscriber that stopped reading at the start (≈1 GB
    /// behind at full scale).
    func restartAndMemory() throws -> [Figure] {
        let count = n(10_000_000)
        let writers = 4
        let group = DispatchGroup()
        for index in 0..<writers {
            group.enter()
            let scenarios = UnsafeTransfer(self)
            Thread.detachNewThread {
                defer { group.leave() }
                try? scenarios.value.fill("big\(index)", count: count / writers)
            }
        }
        group.wait()
        let startup = try system.restart()
        var figures = [
            Figure(
                scenario: "restart (\(count) events)", system: system.name, value: Double(startup) / 1e6,
                unit: "ms to first PING", serverRSS: system.residentBytes)
        ]
        var idle: [any BenchClient] = []
        for index in 0..<1_000 {
            let client = try system.client()
            try client.subscribe("big\(index % writers)", fromStart: false)
            (client as? RedisBenchClient)?.startBlockingRead()  // replay's SUB is already parked
            idle.append(client)
        }
        usleep(500_000)
        figures.append(
            Figure(
                scenario: "memory, 1,000 idle subscribers", system: system.name, value: Double(system.residentBytes) / 1_048_576,
                unit: "MB RSS", serverRSS: system.residentBytes))
        let stopped = try system.client()
        try stopped.subscribe("big0", fromStart: true)
        if let redis = stopped as? RedisBenchClient { redis.startRangeRead() }
        usleep(2_000_000)
        figures.append(
            Figure(
                scenario: "memory, + 1 stopped subscriber", system: system.name, value: Double(system.residentBytes) / 1_048_576,
                unit: "MB RSS", serverRSS: system.residentBytes))
        withExtendedLifetime((idle, stopped)) {}
        return figures
    }
}

/// Moves a non-Sendable client into the one thread that uses it.
struct UnsafeTransfer<T>: @unchecked Sendable {  // handed over once, then used by one thread only
    let value: T
    init(_ value: T) { self.value = value }
}
