import Foundation
import Histogram
import NIOCore
import ReplaySync

/// A system whose Durable Streams HTTP door the HTTP scenarios can drive.
protocol DurableStreamsEndpoint {
    var httpHost: String { get }
    var httpPort: Int { get }
    /// The server's process, for its descriptors.
    var serverPID: Int32? { get }
}

extension ReplayHTTPSystem: DurableStreamsEndpoint {}

/// Any Durable Streams server, by URL (`--ds-url`): the reference server that
/// `refserver.sh PORT` starts, or another implementation. Only the HTTP scenarios apply; the
/// tool neither starts nor stops it, so each round's stream is a new one. Its CPU (for the
/// scenario, from its start) and memory are read from `/proc` when `--ds-pid` names it.
final class DurableStreamsURLSystem: SystemUnderTest, DurableStreamsEndpoint {
    let name = "ds-url"
    let httpHost: String
    let httpPort: Int
    private let pid: Int32?
    /// The server's CPU when this run began: it lives on across runs.
    private let startCPU: Double

    init(url: String, pid: Int32?) throws {
        guard let components = URLComponents(string: url), let host = components.host, let port = components.port, components.scheme == "http" else {
            throw BenchError("--ds-url takes http://HOST:PORT (an IPv4 address), not '\(url)'")
        }
        httpHost = host == "localhost" ? "127.0.0.1" : host
        httpPort = port
        self.pid = pid
        startCPU = pid.map(processCPUSeconds) ?? 0
    }

    func client() throws -> any BenchClient { throw BenchError("ds-url runs the HTTP scenarios only (publish-http)") }
    var serverPID: Int32? { pid }
    var residentBytes: Int { pid.map(processResidentBytes) ?? 0 }
    var cpuSeconds: Double { (pid.map(processCPUSeconds) ?? 0) - startCPU }
    func stop() {}
    func restart() throws -> UInt64 { throw BenchError("ds-url is not started by this tool") }
}

extension Scenarios {
    /// `connections` keep-alive connections, each POSTing one event at a time to one new
    /// stream and waiting for the answer (as `wrk` does): requests per second and the
    /// latency of each. With `producer`, each connection is an idempotent producer
    /// (`Producer-Id`, `-Epoch`, `-Seq`), to show what the guarantee costs over HTTP.
    func publishHTTP(connections: Int, producer: Bool) throws -> [Figure] {
        guard let endpoint = system as? any DurableStreamsEndpoint else {
            throw BenchError("publish-http needs an HTTP door: replay-http or ds-url")
        }
        let (host, port, size) = (endpoint.httpHost, endpoint.httpPort, payloadSize)
        let stream = "http-bench-\(UUID().uuidString.prefix(8))"
        let setup = try BufferedSocket(host: host, port: port)
        setup.write {
            $0.writeString("PUT /v1/stream/\(stream) HTTP/1.1\r\nHost: \(host):\(port)\r\nContent-Type: application/octet-stream\r\nContent-Length: 0\r\n\r\n")
        }
        try setup.flush()
        let created = try HTTPAnswer.read(from: setup)
        guard created.status == 200 || created.status == 201 else { throw BenchError("PUT answered \(created.status)") }

        let perConnection = n(100_000) / connections
        let histogram = Locked(Histogram<UInt64>(highestTrackableValue: 60_000_000_000))
        let failures = Locked<[String]>([])
        let group = DispatchGroup()
        let start = now()
        let cpuBefore = system.cpuSeconds
        // Two threads (as `wrk -t2`), each driving its share of the connections with poll():
        // a thread per connection made the load generator the bound on two cores.
        let threads = min(2, connections)
        for thread in 0..<threads {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                do {
                    let mine = Array(stride(from: thread, to: connections, by: threads))
                    let latencies = try Self.post(
                        host: host, port: port, stream: stream, size: size, connections: mine, each: perConnection, producer: producer)
                    histogram.withLock { $0.add(latencies) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        group.wait()
        if let failure = failures.value.first { throw BenchError("a publisher failed: \(failure)") }
        let seconds = Double(now() - start) / 1e9
        let latencies = histogram.value
        let requests = perConnection * connections
        let name = "publish-http x\(connections)\(producer ? " producer" : "")"
        // The server's CPU per request: steadier than the rate, which the load generator
        // shares the cores with.
        let cpu = (system.cpuSeconds - cpuBefore) / Double(requests) * 1e6
        return [
            Figure(
                scenario: name, system: system.name, value: Double(requests) / seconds, unit: "POSTs/s",
                p50: Double(latencies.valueAtPercentile(50)) / 1000, p99: Double(latencies.valueAtPercentile(99)) / 1000,
                serverRSS: system.residentBytes),
            Figure(scenario: name + ": server CPU per POST", system: system.name, value: cpu, unit: "µs", serverRSS: 0),
        ]
    }
}

extension Scenarios {
    /// One load thread: `each` POSTs on every connection of `connections` (their indexes,
    /// which name their producers), one outstanding per connection; the latency of each.
    static func post(
        host: String, port: Int, stream: String, size: Int, connections: [Int], each: Int, producer: Bool
    ) throws -> Histogram<UInt64> {
        var latencies = Histogram<UInt64>(highestTrackableValue: 60_000_000_000)
        let sockets = try connections.map { _ in try BufferedSocket(host: host, port: port) }
        var sent = [Int](repeating: 0, count: sockets.count)
        var answered = [Int](repeating: 0, count: sockets.count)
        var sentAt = [UInt64](repeating: 0, count: sockets.count)
        let body = payload(size: size)
        func send(_ slot: Int) throws {
            let (socket, sequence, index) = (sockets[slot], sent[slot], connections[slot])
            socket.write { buffer in
                buffer.writeString("POST /v1/stream/\(stream) HTTP/1.1\r\nHost: \(host):\(port)\r\n")
                buffer.writeString("Content-Type: application/octet-stream\r\nContent-Length: \(body.readableBytes)\r\n")
                if producer { buffer.writeString("Producer-Id: bench-\(index)\r\nProducer-Epoch: 0\r\nProducer-Seq: \(sequence)\r\n") }
                buffer.writeString("\r\n")
                buffer.writeImmutableBuffer(body)
            }
            sentAt[slot] = now()
            try socket.flush()
            sent[slot] += 1
        }
        for slot in sockets.indices { try send(slot) }
        var polled = sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        while answered.reduce(0, +) < each * sockets.count {
            guard poll(&polled, nfds_t(polled.count), 60_000) > 0 else { throw BenchError("no answer within a minute") }
            for slot in polled.indices where polled[slot].revents != 0 {
                try sockets[slot].fill()
                while answered[slot] < sent[slot], let answer = try HTTPAnswer.take(from: &sockets[slot].input) {
                    guard (200..<300).contains(answer.status) else { throw BenchError("POST answered \(answer.status)") }
                    _ = latencies.record(now() - sentAt[slot])
                    answered[slot] += 1
                    sockets[slot].discardRead()
                    if sent[slot] < each { try send(slot) }
                }
            }
        }
        return latencies
    }
}

/// A response's status line and headers, its body read and dropped (by `Content-Length`,
/// or chunk by chunk: the reference server answers a producer's POST with an empty chunked
/// body).
struct HTTPAnswer {
    var status = 0

    /// Reads until a whole answer came (blocking).
    static func read(from socket: BufferedSocket) throws -> HTTPAnswer {
        while true {
            if let answer = try take(from: &socket.input) {
                socket.discardRead()
                return answer
            }
            try socket.fill()
        }
    }

    /// The first answer in `input`, taken out with its body, if it came whole; else `nil`
    /// and `input` as it was.
    static func take(from input: inout ByteBuffer) throws -> HTTPAnswer? {
        var rest = input
        let view = rest.readableBytesView
        guard let end = view.firstRange(of: [13, 10, 13, 10]) else { return nil }
        let text = rest.readString(length: end.upperBound - view.startIndex) ?? ""
        var answer = HTTPAnswer()
        var bodyLength = 0
        var chunked = false
        for (index, line) in text.split(separator: "\r\n").enumerated() {
            if index == 0 {
                answer.status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            } else if let colon = line.firstIndex(of: ":") {
                let (name, value) = (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
                if name == "content-length" { bodyLength = Int(value) ?? 0 }
                if name == "transfer-encoding", value.lowercased() == "chunked" { chunked = true }
            }
        }
        if chunked {
            // Chunks (size line, data, CRLF) through the last, empty one.
            while true {
                let chunkView = rest.readableBytesView
                guard let line = chunkView.firstRange(of: [13, 10]) else { return nil }
                let size = Int(rest.readString(length: line.lowerBound - chunkView.startIndex) ?? "", radix: 16) ?? 0
                guard rest.readableBytes >= 2 + size + 2 else { return nil }
                rest.moveReaderIndex(forwardBy: 2 + size + 2)
                if size == 0 { break }
            }
        } else {
            guard rest.readableBytes >= bodyLength else { return nil }
            rest.moveReaderIndex(forwardBy: bodyLength)
        }
        input = rest
        return answer
    }
}
