import Foundation
import Histogram
import NIOCore
import ReplayProtocol
import ReplaySync

/// A worker of a work queue: each event of a stream to one worker of a group, every one
/// acknowledged. replay's consumer groups (SUB … group=, events pushed up to the member's
/// `max_pending`, ACK per event) against Redis Streams' (XREADGROUP … COUNT, XACK), each
/// written the way its protocol is meant to be used, on the same blocking-socket client path.
protocol WorkQueueClient: AnyObject {
    /// Creates the group where the system needs that done before its workers read.
    func prepareGroup(_ stream: String, group: String) throws
    /// Works as `member` of `group` until the socket is shut down: acknowledges every event
    /// handed to it, holding at most `window` unacknowledged, and calls `delivered` with each
    /// event's publish stamp as it arrives and `acknowledged` once its ACK is confirmed
    /// (committed): the two legs of an event's latency, each with one commit in it.
    func work(
        _ stream: String, group: String, member: String, window: Int, delivered: (UInt64) -> Void, acknowledged: (UInt64) -> Void
    ) throws
    /// Ends `work` from another thread.
    func stopWorking()
}

extension BufferedSocket {
    /// Wakes a thread blocked reading this socket (its read returns end-of-file).
    func shutDown() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }
}

extension ReplayBenchClient: WorkQueueClient {
    func prepareGroup(_ stream: String, group: String) throws {}

    func work(
        _ stream: String, group: String, member: String, window: Int, delivered: (UInt64) -> Void, acknowledged: (UInt64) -> Void
    ) throws {
        let options = GroupOptions(group: group, member: member, ackWait: 60, maxPending: window)
        socket.write { ClientCommand.subscribeGroup(stream: stream, sid: "w", start: .all, options: options).write(into: &$0) }
        try socket.flush()
        guard try nextFrame() == .ok else { throw BenchError("SUB … group= refused") }
        // The stamps of the events whose ACKs are on their way, oldest first: +OKs come in order.
        var stamps: [UInt64] = []
        var head = 0
        while true {
            repeat {
                switch try nextFrame() {
                case .event(_, _, let sequence, _, var payload, _, _, _):
                    let stamp = payload.readInteger(as: UInt64.self) ?? 0
                    delivered(stamp)
                    stamps.append(stamp)
                    socket.write { ClientCommand.ack(sid: "w", sequence: sequence).write(into: &$0) }
                case .ok:
                    acknowledged(stamps[head])
                    head += 1
                case let other:
                    throw BenchError("worker: unexpected \(other)")
                }
            } while socket.input.readableBytes > 0
            try socket.flush()
            if head > 4096 {
                stamps.removeFirst(head)
                head = 0
            }
        }
    }

    func stopWorking() { socket.shutDown() }
}

extension RedisBenchClient: WorkQueueClient {
    func prepareGroup(_ stream: String, group: String) throws {
        command(["XGROUP", "CREATE", stream, group, "0", "MKSTREAM"].map { ByteBuffer(string: $0) })
        try socket.flush()
        guard case .simple = try reply() else { throw BenchError("XGROUP CREATE failed") }
    }

    func work(
        _ stream: String, group: String, member: String, window: Int, delivered: (UInt64) -> Void, acknowledged: (UInt64) -> Void
    ) throws {
        let read = ["XREADGROUP", "GROUP", group, member, "COUNT", "\(window)", "BLOCK", "0", "STREAMS", stream, ">"].map { ByteBuffer(string: $0) }
        command(read)
        try socket.flush()
        while true {
            // [[stream, [[id, [field, value]], …]]]
            guard case .array(let streams?) = try reply(), case .array(let pair?) = streams.first, pair.count == 2,
                case .array(let entries?) = pair[1]
            else { continue }
            var stamps: [UInt64] = []
            for entry in entries {
                guard case .array(let parts?) = entry, parts.count == 2, case .bulk(let id?) = parts[0],
                    case .array(let fields?) = parts[1], fields.count == 2, case .bulk(var value?) = fields[1]
                else { continue }
                let stamp = value.readInteger(as: UInt64.self) ?? 0
                delivered(stamp)
                stamps.append(stamp)
                command([ByteBuffer(string: "XACK"), ByteBuffer(string: stream), ByteBuffer(string: group), id])
            }
            // The next read goes with the ACKs, as a pipelining Redis worker sends them.
            command(read)
            try socket.flush()
            for stamp in stamps {
                guard case .integer(1) = try reply() else { throw BenchError("XACK did not acknowledge") }
                acknowledged(stamp)
            }
            socket.discardRead()
        }
    }

    func stopWorking() { socket.shutDown() }
}

extension Scenarios {
    /// `workers` workers share one group over one stream: draining a backlog of `n(200k)`
    /// events (acknowledged events per second, from the workers' start to the last
    /// confirmed ACK), and fed by a publisher at `rate` events/s (publish-to-confirmed-ACK
    /// latency, and publish-to-delivery: the first leg).
    func workQueue(workers: Int = 4, window: Int = 64, rate: Int = 5_000) throws -> [Figure] {
        var figures: [Figure] = []
        for (label, limit) in [(" backlog", 0), (" @\(rate)/s", rate)] {
            let count = limit == 0 ? n(200_000) : max(1_000, Int(Double(rate) * 3 * scale))
            let stream = "work\(limit)"
            guard let setup = try system.client() as? any WorkQueueClient else { throw BenchError("\(system.name) has no work queue") }
            try setup.prepareGroup(stream, group: "g")
            if limit == 0 { try fill(stream, count: count) }
            let histogram = Locked(Histogram<UInt64>(highestTrackableValue: 60_000_000_000))
            let deliveries = Locked(Histogram<UInt64>(highestTrackableValue: 60_000_000_000))
            let acknowledged = Locked(0)
            let clients = try (0..<workers).map { _ in try system.client() as! any WorkQueueClient }
            let done = DispatchGroup()
            var start = now()
            for (index, client) in clients.enumerated() {
                done.enter()
                let worker = UnsafeTransfer(client)
                Thread.detachNewThread {
                    defer { done.leave() }
                    try? worker.value.work(stream, group: "g", member: "m\(index)", window: window) { stamp in
                        let arrived = now()
                        deliveries.withLock { _ = $0.record(arrived - min(stamp, arrived)) }
                    } acknowledged: { stamp in
                        let confirmed = now()
                        histogram.withLock { _ = $0.record(confirmed - min(stamp, confirmed)) }
                        acknowledged.withLock { $0 += 1 }
                    }
                }
            }
            if limit > 0 {
                usleep(200_000)  // the workers are reading (Redis: XREADGROUP BLOCK parked)
                let publisher = try system.publisherClient()
                start = now()
                try publishPaced(publisher, stream, count: count, rate: limit, from: start)
            }
            while acknowledged.value < count { usleep(1_000) }
            let seconds = Double(now() - start) / 1e9
            for client in clients { client.stopWorking() }
            done.wait()
            let h = histogram.value
            // A backlog's latencies are its queueing: only the paced run's are reported.
            figures.append(
                Figure(
                    scenario: "work-queue x\(workers)\(label)", system: system.name, value: Double(count) / seconds, unit: "acked events/s",
                    p50: limit == 0 ? nil : Double(h.valueAtPercentile(50)) / 1000, p99: limit == 0 ? nil : Double(h.valueAtPercentile(99)) / 1000,
                    serverRSS: system.residentBytes))
            if limit > 0 {
                let d = deliveries.value
                figures.append(
                    Figure(
                        scenario: "work-queue x\(workers)\(label) delivery", system: system.name, value: Double(d.totalCount), unit: "events delivered",
                        p50: Double(d.valueAtPercentile(50)) / 1000, p99: Double(d.valueAtPercentile(99)) / 1000, serverRSS: system.residentBytes))
            }
        }
        return figures
    }
}
