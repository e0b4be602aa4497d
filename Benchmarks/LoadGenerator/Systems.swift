import Foundation

/// A server under test, started by the tool in a temp folder on its own Unix socket.
protocol SystemUnderTest: AnyObject {
    var name: String { get }
    func client() throws -> any BenchClient
    /// Resident memory of the server process, in bytes.
    var residentBytes: Int { get }
    /// CPU time the server processes have used (user and system), in seconds: for a fixed
    /// amount of work, steadier than a rate on a machine whose other tenants come and go.
    var cpuSeconds: Double { get }
    func stop()
    /// Stops the server and starts it again on the same data; returns the nanoseconds from
    /// process start to the first answered PING.
    func restart() throws -> UInt64
    /// Where a fan-out's subscribers and its publisher connect (the same server, but for
    /// several daemons sharing one database: subscribers on one, the publisher on another).
    func subscriberClient() throws -> any BenchClient
    func publisherClient() throws -> any BenchClient
}

extension SystemUnderTest {
    func subscriberClient() throws -> any BenchClient { try client() }
    func publisherClient() throws -> any BenchClient { try client() }
}

/// Starts `process` and polls with PING until it answers; returns the nanoseconds taken.
private func timeToFirstPing(_ process: Process, socket: String, client: (String) throws -> any BenchClient) throws -> UInt64 {
    let start = now()
    try process.run()
    while now() - start < 600_000_000_000 {
        guard process.isRunning else { throw BenchError("the server exited during start-up") }
        if let connection = try? client(socket), (try? connection.ping()) != nil { return now() - start }
        usleep(200)
    }
    throw BenchError("no PING answer within 10 minutes")
}

func processResidentBytes(_ pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
        let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
    else { return 0 }
    return kilobytes * 1024
}

/// User and system CPU time of a process, from /proc/<pid>/stat (fields 14 and 15).
func processCPUSeconds(_ pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let afterName = stat.range(of: ") ", options: .backwards)
    else { return 0 }
    // Fields after the command's name start at field 3 (state).
    let fields = stat[afterName.upperBound...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

private func waitForSocket(_ path: String, _ process: Process) throws {
    for _ in 0..<3000 {
        guard process.isRunning else { throw BenchError("\(process.executableURL!.path) exited at start") }
        if FileManager.default.fileExists(atPath: path), (try? BufferedSocket(path: path)) != nil { return }
        usleep(10_000)
    }
    throw BenchError("\(path) never accepted a connection")
}

/// A server process that can be started again on the same data.
final class ServerProcess {
    let socketPath: String
    private let make: () -> Process
    private var process: Process

    init(socketPath: String, make: @escaping () -> Process) throws {
        self.socketPath = socketPath
        self.make = make
        process = make()
        try process.run()
        try waitForSocket(socketPath, process)
    }

    var residentBytes: Int { processResidentBytes(process.processIdentifier) }
    var cpuSeconds: Double { processCPUSeconds(process.processIdentifier) }
    var pid: Int32 { process.processIdentifier }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    func restart(killing: Bool = false, client: (String) throws -> any BenchClient) throws -> UInt64 {
        if killing {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        } else {
            stop()
        }
        process = make()
        return try timeToFirstPing(process, socket: socketPath, client: client)
    }
}

final class ReplaySystem: SystemUnderTest {
    let name = "replay"
    private let server: ServerProcess

    init(replayd: String, directory: String, durability: String = "full") throws {
        let socketPath = directory + "/replayd.sock"
        server = try ServerProcess(socketPath: socketPath) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: replayd)
            process.arguments = ["--socket", socketPath, "--db", directory + "/bench.sqlite", "--sync", durability, "--default-capacity", "unlimited"]
            process.standardError = FileHandle.nullDevice
            return process
        }
    }

    func client() throws -> any BenchClient { try ReplayBenchClient(path: server.socketPath) }
    var socketPath: String { server.socketPath }
    var residentBytes: Int { server.residentBytes }
    var cpuSeconds: Double { server.cpuSeconds }
    func stop() { server.stop() }
    func restart() throws -> UInt64 { try server.restart { try ReplayBenchClient(path: $0) } }
    /// SIGKILL, then a start on the same data.
    func killAndRestart() throws -> UInt64 { try server.restart(killing: true) { try ReplayBenchClient(path: $0) } }
}

/// redis-server with the durability that matches `full`: appendonly, appendfsync always.
final class RedisSystem: SystemUnderTest {
    let name = "redis"
    private let server: ServerProcess

    init(redisServer: String, directory: String) throws {
        let socketPath = directory + "/redis.sock"
        server = try ServerProcess(socketPath: socketPath) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: redisServer)
            process.arguments = [
                "--port", "0", "--unixsocket", socketPath, "--unixsocketperm", "700", "--dir", directory,
                "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            return process
        }
    }

    func client() throws -> any BenchClient { try RedisBenchClient(path: server.socketPath, maxLength: 100_000_000) }
    var residentBytes: Int { server.residentBytes }
    var cpuSeconds: Double { server.cpuSeconds }
    func stop() { server.stop() }
    func restart() throws -> UInt64 { try server.restart { try RedisBenchClient(path: $0, maxLength: 100_000_000) } }
}

/// replayd with its HTTP front door (`--http 127.0.0.1:0`, the port read from its log):
/// publishing over the socket, reading over HTTP (`ReplayHTTPBenchClient`).
final class ReplayHTTPSystem: SystemUnderTest {
    let name = "replay-http"
    private let server: ServerProcess
    private let socketPath: String
    private let logPath: String
    private let payloadSize: Int
    private var port = 0

    init(replayd: String, directory: String, durability: String = "full", payloadSize: Int) throws {
        let socketPath = directory + "/replayd.sock"
        let logPath = directory + "/replayd.log"
        self.socketPath = socketPath
        self.logPath = logPath
        self.payloadSize = payloadSize
        server = try ServerProcess(socketPath: socketPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: replayd)
            process.arguments = [
                "--socket", socketPath, "--db", directory + "/bench.sqlite", "--sync", durability, "--default-capacity", "unlimited",
                "--http", "127.0.0.1:0",
                // The HTTP door's cap takes the descriptors the socket door's leaves: with few
                // socket clients here, 10,000 SSE readers and their publishers fit under a
                // limit of 20,000.
                "--max-connections", "1000", "--http-max-connections", "10100",
            ]
            process.standardError = FileHandle(forWritingAtPath: logPath)
            return process
        }
        try readPort()
    }

    var serverPID: Int32? { server.pid }

    private func readPort() throws {
        for _ in 0..<3000 {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            if let line = log.split(separator: "\n").last(where: { $0.contains("http listening on") }),
                let port = line.split(separator: ":").last.flatMap({ Int($0) })
            {
                self.port = port
                return
            }
            usleep(10_000)
        }
        throw BenchError("replayd's HTTP front door did not listen")
    }

    func client() throws -> any BenchClient {
        try ReplayHTTPBenchClient(socketPath: socketPath, host: "127.0.0.1", port: port, payloadSize: payloadSize)
    }

    var httpHost: String { "127.0.0.1" }
    var httpPort: Int { port }

    var residentBytes: Int { server.residentBytes }
    var cpuSeconds: Double { server.cpuSeconds }
    func stop() { server.stop() }

    func restart() throws -> UInt64 {
        let time = try server.restart { try ReplayBenchClient(path: $0) }
        try readPort()
        return time
    }
}

/// Two replayd sharing a new database on a PostgreSQL server (`--postgres`), each on its
/// own socket, as two hosts would run them. Connections alternate between the two, so
/// pipelined publishers split over both; a fan-out publishes on the first and subscribes
/// on the second, so its latency is the cross-daemon one (commit, NOTIFY, read back).
final class ReplayPostgresSystem: SystemUnderTest {
    let name = "replay-pg"
    private let servers: [ServerProcess]
    private let server: String
    private let database: String
    private var next = 0

    init(replayd: String, directory: String, postgres: String, durability: String = "full") throws {
        server = postgres
        database = "replay_bench_\(UInt32.random(in: 0...UInt32.max))"
        try Self.psql(postgres, "CREATE DATABASE \(database)")
        let url = postgres[..<(postgres.range(of: "/", options: .backwards)?.upperBound ?? postgres.endIndex)] + database
        servers = try ["a", "b"].map { host in
            let socketPath = directory + "/replayd-\(host).sock"
            return try ServerProcess(socketPath: socketPath) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: replayd)
                process.arguments = ["--socket", socketPath, "--db", String(url), "--sync", durability, "--default-capacity", "unlimited"]
                process.standardError = FileHandle.nullDevice
                return process
            }
        }
    }

    static func psql(_ url: String, _ sql: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", url, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("psql \(sql) failed") }
    }

    func client() throws -> any BenchClient {
        defer { next += 1 }
        return try ReplayBenchClient(path: servers[next % 2].socketPath)
    }

    func subscriberClient() throws -> any BenchClient { try ReplayBenchClient(path: servers[1].socketPath) }
    func publisherClient() throws -> any BenchClient { try ReplayBenchClient(path: servers[0].socketPath) }
    var residentBytes: Int { servers.map(\.residentBytes).reduce(0, +) }
    var cpuSeconds: Double { servers.map(\.cpuSeconds).reduce(0, +) }

    func stop() {
        for server in servers { server.stop() }
        try? Self.psql(server, "DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
    }

    func restart() throws -> UInt64 { try servers[0].restart { try ReplayBenchClient(path: $0) } }
}
