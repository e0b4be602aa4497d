import Foundation

/// A server under test, started by the tool in a temp folder on its own Unix socket.
protocol SystemUnderTest: AnyObject {
    var name: String { get }
    func client() throws -> any BenchClient
    /// Resident memory of the server process, in bytes.
    var residentBytes: Int { get }
    func stop()
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

final class ReplaySystem: SystemUnderTest {
    let name = "replay"
    let directory: String
    let socketPath: String
    private let process = Process()

    init(replayd: String, directory: String) throws {
        self.directory = directory
        socketPath = directory + "/replayd.sock"
        process.executableURL = URL(fileURLWithPath: replayd)
        process.arguments = ["--socket", socketPath, "--db", directory + "/bench.sqlite", "--sync", "full", "--default-capacity", "unlimited"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitForSocket(socketPath, process)
    }

    func client() throws -> any BenchClient { try ReplayBenchClient(path: socketPath) }
    var residentBytes: Int { processResidentBytes(process.processIdentifier) }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

/// redis-server with the durability that matches `full`: appendonly, appendfsync always.
final class RedisSystem: SystemUnderTest {
    let name = "redis"
    let socketPath: String
    private let process = Process()

    init(redisServer: String, directory: String) throws {
        socketPath = directory + "/redis.sock"
        process.executableURL = URL(fileURLWithPath: redisServer)
        process.arguments = [
            "--port", "0", "--unixsocket", socketPath, "--unixsocketperm", "700", "--dir", directory,
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try waitForSocket(socketPath, process)
    }

    func client() throws -> any BenchClient { try RedisBenchClient(path: socketPath, maxLength: 100_000_000) }
    var residentBytes: Int { processResidentBytes(process.processIdentifier) }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
