import CEpoll
import Foundation
import Histogram
import NIOCore
import ReplaySync

extension Scenarios {
    /// `readers` SSE readers (`offset=now&live=sse`) spread over `streams` new text streams,
    /// held by two threads with epoll, as many connections as the server allows; then
    /// `rate` events a second for `seconds`, POSTed round robin over the streams by eight
    /// connections, each payload its publish time. Every reader must get every event of its
    /// stream: the figures are the deliveries a second with their publish-to-delivery
    /// latency, the ones missing, and the server's memory, descriptors and CPU per reader
    /// and per delivery.
    func sseReaders(readers: Int, streams: Int, rate: Int, seconds: Double) throws -> [Figure] {
        guard let endpoint = system as? any DurableStreamsEndpoint else {
            throw BenchError("sse-readers needs an HTTP door: replay-http or ds-url")
        }
        let (host, port) = (endpoint.httpHost, endpoint.httpPort)
        let prefix = "sse-\(UUID().uuidString.prefix(8))-"
        let setup = try BufferedSocket(host: host, port: port)
        for stream in 0..<streams {
            setup.write {
                $0.writeString("PUT /v1/stream/\(prefix)\(stream) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n")
            }
            try setup.flush()
            let created = try HTTPAnswer.read(from: setup)
            guard created.status == 200 || created.status == 201 else { throw BenchError("PUT answered \(created.status)") }
        }
        let idleRSS = system.residentBytes
        let idleDescriptors = Self.descriptors(of: endpoint.serverPID)

        // Each thread connects its readers and sends their GETs, then reads the heads and
        // the events. Reader i reads stream i % streams.
        let tally = Locked(SSETally())
        let stop = Locked(false)
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        for thread in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let sockets = try stride(from: thread, to: readers, by: 2).map { index in
                        // In steps, as clients arrive: a burst of thousands of connects
                        // overflows the server's accept queue.
                        if index % 500 < 2 { usleep(50_000) }
                        let socket = try BufferedSocket(host: host, port: port)
                        socket.write {
                            $0.writeString("GET /v1/stream/\(prefix)\(index % streams)?offset=now&live=sse HTTP/1.1\r\nHost: \(host):\(port)\r\n\r\n")
                        }
                        try socket.flush()
                        return socket
                    }
                    try Self.readSSE(sockets, tally: tally, stop: stop)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    stop.withLock { $0 = true }
                }
            }
        }
        try Self.waitForReaders(readers, tally: tally, failures: failures, stop: stop)
        let connectedRSS = system.residentBytes
        let descriptors = Self.descriptors(of: endpoint.serverPID)
        let cpuBefore = system.cpuSeconds
        let publishing = now()

        Self.progress("sse-readers: \(readers) readers connected; publishing \(rate) events/s for \(seconds) s")
        let sent = try Self.publishPaced(host: host, port: port, prefix: prefix, streams: streams, rate: rate, seconds: seconds)
        let perStream = (0..<streams).map { stream in readers / streams + (stream < readers % streams ? 1 : 0) }
        let expected = (0..<sent).reduce(0) { $0 + perStream[$1 % streams] }
        let deadline = now() + 30_000_000_000
        while tally.value.delivered < expected && now() < deadline && failures.value.isEmpty { usleep(10_000) }
        let cpu = system.cpuSeconds - cpuBefore
        // The rate over the time it really took, from the first POST to the last delivery
        // (or the deadline): a server slower than the pace stretches the publishing (each
        // publisher waits for its answers), and the nominal `seconds` would hide that.
        let elapsed = Double(now() - publishing) / 1e9
        stop.withLock { $0 = true }
        group.wait()
        if let failure = failures.value.first { throw BenchError("a reader failed: \(failure)") }
        let result = tally.value
        // A parked reader whose client left is found out at its next write (the quiet
        // stream's keep-alive, --long-poll-timeout): wait until the server has let go of
        // them, or the next round would find its connections still counted.
        let letGo = now() + 120_000_000_000
        while Self.descriptors(of: endpoint.serverPID) > idleDescriptors + 16 && now() < letGo { usleep(100_000) }
        let name = "sse x\(readers)/\(streams) @\(rate)/s"
        return [
            Figure(
                scenario: name, system: system.name, value: Double(result.delivered) / elapsed, unit: "deliveries/s",
                p50: Double(result.latencies.valueAtPercentile(50)) / 1000, p99: Double(result.latencies.valueAtPercentile(99)) / 1000,
                serverRSS: system.residentBytes),
            Figure(scenario: name + ": missing", system: system.name, value: Double(expected - result.delivered), unit: "of \(expected)", serverRSS: 0),
            Figure(
                scenario: name + ": RSS/reader", system: system.name, value: Double(connectedRSS - idleRSS) / Double(readers),
                unit: "bytes", serverRSS: connectedRSS),
            Figure(scenario: name + ": fds", system: system.name, value: Double(descriptors), unit: "fds", serverRSS: 0),
            Figure(
                scenario: name + ": CPU/delivery", system: system.name, value: cpu / Double(max(result.delivered, 1)) * 1e6, unit: "µs",
                serverRSS: 0),
        ]
    }

    /// Waits until every reader is connected, saying how many are every 5 s. A server
    /// that lets in no more for 30 s holds fewer connections than the readers (its
    /// connection cap or its descriptor limit): that ends the scenario, saying so, rather
    /// than waiting forever.
    static func waitForReaders(_ readers: Int, tally: Locked<SSETally>, failures: Locked<[String]>, stop: Locked<Bool>) throws {
        var (known, grew, reported) = (0, now(), now())
        while tally.value.connected < readers {
            if let failure = failures.value.first { throw BenchError("a reader failed: \(failure)") }
            let connected = tally.value.connected
            if connected > known { (known, grew) = (connected, now()) }
            if now() - reported >= 5_000_000_000 {
                progress("sse-readers: \(connected) of \(readers) readers connected")
                reported = now()
            }
            if now() - grew >= 30_000_000_000 {
                stop.withLock { $0 = true }
                throw BenchError(
                    "only \(connected) of \(readers) SSE readers were let in, and none more in 30 s: the server's connection cap "
                        + "(replayd --http-max-connections) or its descriptor limit (ulimit -n) is below \(readers)")
            }
            usleep(10_000)
        }
    }

    /// A line on standard error, where it does not mix with the figures.
    static func progress(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// The server's open descriptors, 0 when its process is not known.
    static func descriptors(of pid: Int32?) -> Int {
        pid.map { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\($0)/fd").count) ?? 0 } ?? 0
    }

    /// POSTs `rate` events a second for `seconds` from eight connections, each payload its
    /// send time and a newline (one SSE `data` line); returns how many were sent.
    static func publishPaced(host: String, port: Int, prefix: String, streams: Int, rate: Int, seconds: Double) throws -> Int {
        let connections = 8
        let total = Int(Double(rate) * seconds)
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        let start = now()
        for connection in 0..<connections {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let socket = try BufferedSocket(host: host, port: port)
                    for event in stride(from: connection, to: total, by: connections) {
                        let due = start + UInt64(event) * 1_000_000_000 / UInt64(rate)
                        let current = now()
                        if due > current { usleep(UInt32((due - current) / 1000)) }
                        let body = "\(now())\n"
                        socket.write {
                            $0.writeString("POST /v1/stream/\(prefix)\(event % streams) HTTP/1.1\r\nHost: \(host):\(port)\r\n")
                            $0.writeString("Content-Type: text/plain\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
                        }
                        try socket.flush()
                        let answer = try HTTPAnswer.read(from: socket)
                        guard (200..<300).contains(answer.status) else { throw BenchError("POST answered \(answer.status)") }
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        group.wait()
        if let failure = failures.value.first { throw BenchError("a publisher failed: \(failure)") }
        return total
    }

    /// One reader thread: waits on its sockets with epoll until `stop`, counting each
    /// reader's response head and each `data` line that carries a publish time.
    ///
    /// epoll, not `poll()`: a `poll()` over 5,000 sockets scans all of them on every call,
    /// and with 10,000 readers that scan took more of the two cores than the server it
    /// measures (`perf record -a`: the load generator 430 samples a second of 800, replayd
    /// 355, mostly in the kernel's `tcp_poll` and `fdget`). epoll hands back only the
    /// sockets that are ready.
    static func readSSE(_ sockets: [BufferedSocket], tally: Locked<SSETally>, stop: Locked<Bool>) throws {
        var headed = [Bool](repeating: false, count: sockets.count)
        let epoll = epoll_create1(0)
        guard epoll >= 0 else { throw BenchError("epoll_create1 failed: \(String(cString: strerror(errno)))") }
        defer { close(epoll) }
        for (slot, socket) in sockets.enumerated() {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = UInt64(slot)
            guard epoll_ctl(epoll, EPOLL_CTL_ADD, socket.fd, &event) == 0 else {
                throw BenchError("epoll_ctl failed: \(String(cString: strerror(errno)))")
            }
        }
        var ready = [epoll_event](repeating: epoll_event(), count: 512)
        var local = SSETally()
        while !stop.value {
            let count = epoll_wait(epoll, &ready, Int32(ready.count), 20)
            guard count >= 0 || errno == EINTR else { throw BenchError("epoll_wait failed: \(String(cString: strerror(errno)))") }
            for event in ready.prefix(Int(max(count, 0))) {
                let slot = Int(event.data.u64)
                let socket = sockets[slot]
                try socket.fill()
                if !headed[slot] {
                    let view = socket.input.readableBytesView
                    guard let end = view.firstRange(of: [13, 10, 13, 10]) else { continue }
                    guard view.starts(with: Array("HTTP/1.1 200".utf8)) else {
                        throw BenchError("a reader's GET answered \(String(decoding: view.prefix(40), as: UTF8.self))")
                    }
                    socket.input.moveReaderIndex(to: end.upperBound)
                    headed[slot] = true
                    local.connected += 1
                }
                local.take(&socket.input, at: now())
                socket.input.discardReadBytes()
            }
            if local.connected > 0 || local.delivered > 0 {
                tally.withLock { $0.addCounts(of: local) }
                (local.connected, local.delivered) = (0, 0)
            }
        }
        // The latencies once, at the end: merging a histogram of this range copies and adds
        // some 28,000 buckets, and doing that after every wake-up took the thread's time.
        tally.withLock { $0.latencies.add(local.latencies) }
    }
}

/// What the reader threads saw: the readers whose response began, the events delivered, and
/// how long after publishing each arrived.
struct SSETally {
    var connected = 0
    var delivered = 0
    var latencies = Histogram<UInt64>(highestTrackableValue: 60_000_000_000)

    /// Counts the whole lines in `input` (leaving a partial one): a `data:` line with a
    /// number is an event published at that time. The chunk sizes of the chunked body, the
    /// event names and the control events' JSON are other lines, passed over.
    mutating func take(_ input: inout ByteBuffer, at time: UInt64) {
        while let newline = input.readableBytesView.firstIndex(of: 10) {
            let line = input.readableBytesView[input.readerIndex..<newline]
            if line.starts(with: Array("data:".utf8)), let sent = UInt64(String(decoding: line.dropFirst(5), as: UTF8.self)) {
                delivered += 1
                _ = latencies.record(time > sent ? time - sent : 0)
            }
            input.moveReaderIndex(to: newline + 1)
        }
    }

    /// The readers and deliveries `other` counted; its latencies are added once, at the end.
    mutating func addCounts(of other: SSETally) {
        connected += other.connected
        delivered += other.delivered
    }
}
