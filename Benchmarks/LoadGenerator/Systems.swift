import Foundation

/// A server under test, started by the tool in a temp folder on its own Unix socket.
protocol SystemUnderTest: AnyObject {
    var name: String { get }
    func client() throws -> any BenchClient
    /// Resident memory of the server process, in bytes.
    var residentBytes: Int { get }
    func stop()
    /// Stops the server and starts it again on the same data; returns the nanoseconds from
    /// process start to the first answered PING.
    func restart() throws -> UInt64
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

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    func restart(client: (String) throws -> any BenchClient) throws -> UInt64 {
        stop()
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
    var residentBytes: Int { server.residentBytes }
    func stop() { server.stop() }
    func restart() throws -> UInt64 { try server.restart { try ReplayBenchClient(path: $0) } }
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
            ]
            process.standardError = FileHandle(forWritingAtPath: logPath)
            return process
        }
        try readPort()
    }

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

    var residentBytes: Int { server.residentBytes }
    func stop() { server.stop() }

    func restart() throws -> UInt64 {
        let time = try server.restart { try ReplayBenchClient(path: $0) }
        try readPort()
        return time
    }
}
