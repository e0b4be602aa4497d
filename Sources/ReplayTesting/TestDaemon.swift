import Dispatch
import Foundation
import ReplayCore
import ReplaySync
import Subprocess
import SystemPackage

/// The real `replayd` binary, started on a socket and database in a temp folder.
///
/// Started with swift-subprocess, not Foundation's `Process`: the `Process.run()` of the
/// toolchain's Foundation (6.3.x) copies each `/proc/self/fd` entry's name as a 256-byte
/// struct field, reading past the end of glibc's `readdir` buffer. With the many
/// descriptors of a full parallel test run open, that read crossed into an unmapped page
/// and the whole test process died of SIGSEGV in `Process.run()` (swift-corelibs-foundation
/// #5472, fixed on its main branch only). swift-subprocess closes descriptors with
/// `close_range` instead. `ChildProcessTests` keeps `Process` out of the code.
public final class TestDaemon: Sendable {
    public let directory: String
    public let socketPath: String
    public let databasePath: String
    public let logPath: String
    public let pid: Int32
    private let process: ChildProcess
    /// The daemon's exit status once swift-subprocess has reaped it (the signal number if a
    /// signal killed it), or the error that ended the run.
    private let ended: Task<Int32, Never>
    private let exitStatus: Locked<Int32?>

    /// Starts `replayd` and returns once it accepts connections. `database` is a file name
    /// in `directory`, or a `postgres://` URL (several daemons then share it: give each its
    /// own `socket`).
    /// `descriptorLimit`: started under that open-files limit (soft and hard), as under
    /// `ulimit -n`.
    /// `service`: what a service manager would give it (its environment, the listening
    /// socket systemd passes, stderr as journald's stream).
    public static func start(
        in directory: String, arguments extra: [String] = [], database: String = "replay.sqlite", socket: String? = nil,
        descriptorLimit: Int? = nil, service: ServiceManagerSetup = .init()
    ) async throws -> TestDaemon {
        let daemon = try await TestDaemon(
            directory: directory, extra: extra, database: database, socket: socket, descriptorLimit: descriptorLimit, service: service)
        try await daemon.waitUntilReady()
        return daemon
    }

    /// Starts `replayd` without waiting (for tests of start-up failures).
    public static func launch(
        in directory: String, arguments extra: [String] = [], database: String = "replay.sqlite", socket: String? = nil
    ) async throws -> TestDaemon {
        try await TestDaemon(directory: directory, extra: extra, database: database, socket: socket)
    }

    /// The daemon closes a connection whose request head has not arrived within
    /// `--http-header-timeout` (10 s) of its start. A test process starved by the rest of a
    /// parallel suite on two cores can take that long between connecting and writing: six
    /// HTTP tests once failed together with "I/O on closed channel" that way, none of them
    /// about the deadline. So test daemons wait 10 minutes unless a test sets its own (the
    /// tests of the deadline do).
    public static let patientDoor = ["--http-header-timeout", "600"]

    /// What systemd would give the daemon, done here without systemd: environment
    /// variables, a listening socket passed as descriptor 3 with `LISTEN_PID`/`LISTEN_FDS`
    /// set as `sd_listen_fds(3)` reads them, and `JOURNAL_STREAM` naming its stderr.
    public struct ServiceManagerSetup: Sendable {
        public var environment: [String: String]
        public var inheritedSocket: Int32?
        public var stderrIsJournal: Bool

        public init(environment: [String: String] = [:], inheritedSocket: Int32? = nil, stderrIsJournal: Bool = false) {
            self.environment = environment
            self.inheritedSocket = inheritedSocket
            self.stderrIsJournal = stderrIsJournal
        }
    }

    private init(
        directory: String, extra: [String], database: String, socket: String? = nil, descriptorLimit: Int? = nil,
        service: ServiceManagerSetup = .init()
    ) async throws {
        self.directory = directory
        socketPath = socket ?? directory + "/replayd.sock"
        databasePath = database.hasPrefix("postgres") ? database : directory + "/" + database
        logPath = directory + "/replayd-\(UInt32.random(in: 0...UInt32.max)).log"
        let log = try FileDescriptor.open(
            FilePath(logPath), .writeOnly, options: [.create, .truncate], permissions: [.ownerReadWrite, .groupRead, .otherRead])
        var executable = FilePath(try builtExecutable("replayd"))
        let extra = extra.contains("--http-header-timeout") ? extra : extra + Self.patientDoor
        var arguments = Arguments(["--socket", socketPath, "--db", databasePath] + extra)
        var variables = service.environment
        if service.stderrIsJournal {
            var status = stat()
            fstat(log.rawValue, &status)
            variables["JOURNAL_STREAM"] = "\(status.st_dev):\(status.st_ino)"
        }
        if service.inheritedSocket != nil {
            // As systemd does after its fork: the socket at descriptor 3, and LISTEN_PID the
            // daemon's own pid (the shell's, which exec keeps). The socket comes in as the
            // shell's stdin, the one descriptor swift-subprocess places.
            let script = "export LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=replayd; exec 3<&0 0</dev/null; exec \"$0\" \"$@\""
            arguments = Arguments(["-c", script, executable.string, "--socket", socketPath, "--db", databasePath] + extra)
            executable = FilePath("/bin/sh")
        }
        let environment = Environment.inherit.updating(environmentKeys(variables).mapValues { Optional($0) })
        if let descriptorLimit {
            // prlimit sets the limit and execs replayd: the same process, the same pid.
            arguments = Arguments(
                ["--nofile=\(descriptorLimit):\(descriptorLimit)", "--", executable.string, "--socket", socketPath, "--db", databasePath] + extra)
            executable = FilePath("/usr/bin/prlimit")
        }
        // The run lives in a task of its own for as long as the daemon does; its body hands
        // the pid back at once and returns, and the run then waits for the process to exit.
        let (spawned, spawnedSink) = AsyncStream.makeStream(of: Result<ChildProcess, any Error>.self)
        let exitStatus = Locked<Int32?>(nil)
        ended = Task {
            let status: Int32
            do {
                // Its stdin: the socket a service manager passes (see above), else nothing.
                let input = try service.inheritedSocket.map { FileDescriptor(rawValue: $0) } ?? FileDescriptor.open("/dev/null", .readOnly)
                let result = try await Subprocess.run(
                    .path(executable), arguments: arguments, environment: environment,
                    input: .fileDescriptor(input, closeAfterSpawningProcess: service.inheritedSocket == nil), output: .discarded,
                    error: .fileDescriptor(log, closeAfterSpawningProcess: true)
                ) { spawnedSink.yield(.success(ChildProcess($0.processIdentifier))) }
                status =
                    switch result.terminationStatus {
                    case .exited(let code): code
                    case .signaled(let signal): signal
                    }
            } catch {
                spawnedSink.yield(.failure(error))
                status = -1
            }
            spawnedSink.finish()
            exitStatus.withLock { $0 = status }
            return status
        }
        self.exitStatus = exitStatus
        guard let outcome = await spawned.first(where: { _ in true }) else { throw TestFailure("replayd was not started") }
        process = try outcome.get()
        pid = process.pid
        Self.running.withLock { [process, logPath] in $0[socketPath] = (process, logPath) }
    }

    /// The daemons this test process started, by socket path, for `stateDump`.
    private static let running = Locked<[String: (process: ChildProcess, log: String)]>([:])

    /// Asks the daemon on `socketPath` for its state (SIGUSR1) and returns what it wrote to
    /// its log: each connection's subscriptions and replies owed, each stream's parked
    /// cursors. For a test's failure message.
    public static func stateDump(socketPath: String) async -> String {
        guard let (process, log) = running.withLock({ $0[socketPath] }) else {
            return "(no daemon started by this test process listens on \(socketPath))"
        }
        func text() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        let before = text().components(separatedBy: "state dump end").count
        process.send(SIGUSR1)
        for _ in 0..<500 where text().components(separatedBy: "state dump end").count == before {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let lines = text().split(separator: "\n").filter { $0.contains("state") }
        let dump = lines.suffix(from: lines.lastIndex { $0.contains("state dump begin") } ?? lines.startIndex)
        return dump.isEmpty
            ? "(replayd \(process.pid) wrote no state dump; its log:\n\(text().suffix(4000)))"
            : "replayd \(process.pid)'s state:\n" + dump.joined(separator: "\n")
    }

    /// Whether the process still runs: not yet reaped, and not a zombie waiting to be.
    public var isRunning: Bool { exitStatus.value == nil && !process.hasExited }

    /// Sends `signal` to the daemon if it still runs (through its process descriptor: see
    /// `ChildProcess`).
    public func signal(_ signal: Int32) {
        process.send(signal)
    }

    /// What the daemon wrote to stderr so far.
    public var log: String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// Polls until the socket accepts a connection (start-up readiness, not a timing
    /// assertion); fails if the process exits first or takes more than a minute.
    public func waitUntilReady() async throws {
        for _ in 0..<3000 {
            guard isRunning else {
                let status = await waitForExit()
                throw TestFailure("replayd exited with \(status) during start-up: \(log)")
            }
            let socketPath = self.socketPath
            if FileManager.default.fileExists(atPath: socketPath), await Self.accepts(socketPath) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("replayd did not accept connections within a minute: \(log)")
    }

    /// Whether the daemon answers on `path`: served (HELLO … PONG) or turned away by
    /// design (`forbidden`, `too_many_connections`). The probe closes its side and reads
    /// until the daemon closes too, so that once it returns its connection no longer counts
    /// against `--max-connections` (the daemon frees the place before it closes).
    static func accepts(_ path: String) async -> Bool {
        let frames = try? await withWireClient(path) { client in
            try await client.send(.ping)
            client.finishSending()
            return try await client.framesUntilClose()
        }
        return frames?.contains { frame in
            switch frame {
            case .pong, .error: true
            default: false
            }
        } == true
    }

    /// Sends `signal` and waits for the process to exit; returns its exit status (or the
    /// signal number if it was killed by one).
    @discardableResult
    public func stop(_ signal: Int32 = SIGTERM) async -> Int32 {
        if isRunning { process.send(signal) }
        let status = await waitForExit()
        Self.running.withLock { running in
            if running[socketPath]?.process === process { running[socketPath] = nil }
        }
        return status
    }

    /// Waits for the process to exit on its own.
    public func waitForExit() async -> Int32 {
        await ended.value
    }

    /// The address of the HTTP front door (`--http host:0` picks a port; the daemon logs the
    /// one it bound), once it listens.
    public func httpAddress() async throws -> String {
        for _ in 0..<3000 {
            if let line = log.split(separator: "\n").last(where: { $0.contains("http listening on ") || $0.contains("https listening on ") }),
                let address = line.split(separator: " ").last
            {
                return String(address)
            }
            guard isRunning else { throw TestFailure("replayd exited before its HTTP front door listened: \(log)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("replayd's HTTP front door did not listen within a minute: \(log)")
    }

    /// File descriptors the daemon holds open (from /proc).
    public var openDescriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    /// Resident memory of the daemon, in bytes (from /proc).
    public var residentBytes: Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes * 1024
    }

    deinit {
        if isRunning { process.send(SIGKILL) }
    }
}

/// Runs `body` with a daemon started in a fresh temp folder (its store `database`: a file
/// there, or a PostgreSQL URL), stopped afterwards.
public func withDaemon<T: Sendable>(
    arguments: [String] = [], database: String = "replay.sqlite", _ body: (TestDaemon) async throws -> T
) async throws -> T {
    try await withTemporaryDirectory { directory in
        let daemon = try await TestDaemon.start(in: directory, arguments: arguments, database: database)
        do {
            let result = try await body(daemon)
            await daemon.stop()
            return result
        } catch {
            await daemon.stop()
            throw error
        }
    }
}

/// Runs a program to completion; returns its exit status and what it printed.
/// swift-subprocess feeds, drains and waits without holding a thread of the cooperative
/// pool, so a long child (the README tour, the crash loop) never starves other tests.
public func runProgram(
    _ executable: String, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil
) async throws -> (status: Int32, stdout: String, stderr: String) {
    let variables: Environment = environment.map { .custom(environmentKeys($0)) } ?? .inherit
    let result = try await Subprocess.run(
        .path(FilePath(executable)), arguments: Arguments(arguments), environment: variables,
        input: .string(stdin ?? ""), output: .string(limit: 256 << 20), error: .string(limit: 256 << 20))
    let status: Int32 =
        switch result.terminationStatus {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    return (status, result.standardOutput, result.standardError)
}

/// Environment variables as swift-subprocess names them.
func environmentKeys(_ variables: [String: String]) -> [Environment.Key: String] {
    Dictionary(uniqueKeysWithValues: variables.compactMap { key, value in Environment.Key(rawValue: key).map { ($0, value) } })
}

/// Runs `body` with a tmpfs of `size` (as mount's `size=`, e.g. "4m") mounted on
/// `directory`; unmounts it afterwards, lazily, so that a descriptor still open does not
/// keep it. Mounting needs root.
public func withTmpfs<T>(at directory: String, size: String, _ body: () async throws -> T) async throws -> T {
    let mount = try await runProgram("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory])
    guard mount.status == 0 else { throw TestFailure("mount tmpfs on \(directory): \(mount.stderr)") }
    let result: Result<T, any Error>
    do { result = .success(try await body()) } catch { result = .failure(error) }
    _ = try? await runProgram("/bin/umount", ["-l", directory])
    return try result.get()
}

/// Polls `condition` until it holds; fails after `seconds`. For waiting on real processes
/// (a child to exit), never for asserting how long something took. A minute by default:
/// the full suite on two cores has stalled a waiting test past 30 s (four HTTP tests that
/// take 3 s alone failed together), and the limit only bounds a wait that never ends.
public func eventually(
    within seconds: Double = 60, _ what: String, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    throw TestFailure("timed out waiting for: \(what)")
}

/// Whether a process with this pid exists (and is not a zombie).
public func processIsAlive(_ pid: Int32) -> Bool {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
    // The state is the field after the parenthesised command name.
    guard let close = status.lastIndex(of: ")") else { return false }
    let state = status[status.index(close, offsetBy: 2)...].prefix(1)
    return state != "Z"
}

/// Connects a socket descriptor to a Unix-domain socket path (for tests that need a raw,
/// unread connection, or a readiness probe).
public func connectUnixSocket(_ fd: Int32, _ path: String) -> Bool {
    withUnixSocketAddress(path) { connect(fd, $0, $1) } == 0
}

/// Calls `body` with `path` as a Unix socket's address, for `connect` or `bind`.
public func withUnixSocketAddress<T>(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        for (index, byte) in bytes.enumerated() where index < raw.count - 1 { raw[index] = byte }
    }
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

/// A memory budget for a test, scaled when the tests run under a sanitizer: the sanitized
/// daemon's shadow memory (ThreadSanitizer documents 5–10×, AddressSanitizer 2–3×) and
/// AddressSanitizer's quarantine of freed memory (256 MB by default) are not the daemon's
/// own use.
public func memoryBudget(_ bytes: Int) -> Int {
    underSanitizer ? bytes * 8 : bytes
}

/// Whether this test process (and so the daemon built with it) runs under ThreadSanitizer
/// or AddressSanitizer.
public let underSanitizer: Bool = {
    let program = dlopen(nil, RTLD_NOW)  // the test process and what it links
    defer { if let program { dlclose(program) } }
    return dlsym(program, "__tsan_init") != nil || dlsym(program, "__asan_init") != nil
}()
