import Foundation
import Logging
import ReplayClient
import ReplayProtocol
import ReplaySync
import ReplayTesting
import Testing

@testable import ReplayServer

/// replayd under a service manager, with no systemd running: the tests do what systemd
/// does (a notify socket of their own, a listening socket passed as descriptor 3 with
/// `LISTEN_PID`/`LISTEN_FDS`, `JOURNAL_STREAM`), against the real daemon; and the units
/// in deploy/ pass `systemd-analyze verify`.
@Suite("replayd under systemd", .timeLimit(.minutes(3)))
struct ServiceManagerTests {
    /// READY=1 once both doors listen, a watchdog beat while the writer answers, the state
    /// in STATUS=, STOPPING=1 as the drain begins; and the sources it starts never see the
    /// variables meant for it.
    @Test func theServiceManagerHearsReadyBeatsAndStopping() async throws {
        try await withTemporaryDirectory { directory in
            let manager = try NotifyReceiver(path: directory + "/notify")
            defer { manager.close() }
            // The manager reads its socket all along, as systemd does.
            let heard = Locked<[String]>([])
            let reading = Task {
                while !Task.isCancelled {
                    let messages = manager.received()
                    heard.withLock { $0 += messages }
                    try? await Task.sleep(for: .milliseconds(20))
                }
            }
            defer { reading.cancel() }
            let daemon = try await TestDaemon.start(
                in: directory, arguments: ["--http", "127.0.0.1:0"],
                // A beat a second: the socket's queue (10 messages) holds ten seconds of them, for a
                // reader starved by the rest of the suite (a full queue loses STOPPING=1).
                service: .init(environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "2000000"]))
            try await eventually("READY=1 and a watchdog beat") { heard.value.contains { $0.contains("WATCHDOG=1") } }
            let messages = heard.value
            let ready = try #require(messages.firstIndex { $0.hasPrefix("READY=1\n") }, "\(messages)")
            #expect(messages[ready].contains("STATUS=0 streams, "), "\(messages[ready])")
            #expect(ready < messages.firstIndex { $0.contains("WATCHDOG=1") }!, "READY=1 comes first: \(messages)")
            // Both doors listened before READY=1 was sent.
            #expect(daemon.log.contains("http listening on"))

            let marker = directory + "/source-environment"
            let client = try await ReplayClient.connect(to: daemon.socketPath)
            try await client.create(
                "env", source: "echo \"${NOTIFY_SOCKET:-none} ${WATCHDOG_USEC:-none} ${LISTEN_FDS:-none}\" > \(marker); echo done",
                connect: "eager")
            // Written whole: the shell creates the file empty before `echo` writes its line.
            try await eventually("the source to run") { (try? String(contentsOfFile: marker, encoding: .utf8))?.hasSuffix("\n") == true }
            #expect(try String(contentsOfFile: marker, encoding: .utf8) == "none none none\n")
            try await eventually("a status with the stream and the connection") {
                heard.value.contains { $0.contains("STATUS=1 streams, 1 socket connections") }
            }
            await client.close()

            #expect(await daemon.stop() == 0)
            try await eventually("STOPPING=1") { heard.value.contains { $0.hasPrefix("STOPPING=1") } }
        }
    }

    /// A manager that stops reading its socket loses messages; it never holds the daemon,
    /// which still stops at once.
    @Test func aManagerThatStopsReadingDoesNotHoldTheDaemon() async throws {
        try await withTemporaryDirectory { directory in
            let manager = try NotifyReceiver(path: directory + "/notify")
            defer { manager.close() }
            let daemon = try await TestDaemon.start(
                in: directory, service: .init(environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "20000"]))
            // Beats every 10 ms fill the socket's queue (net.unix.max_dgram_qlen, 10 by
            // default), unread; a blocking send would then hold the daemon's drain for good.
            try await Task.sleep(for: .milliseconds(300))
            #expect(await daemon.stop() == 0)
            #expect(manager.received().contains { $0.hasPrefix("READY=1") })
        }
    }

    /// The socket stays the service manager's: the daemon serves the one it was given,
    /// leaves it in place when it stops, and a client that connects while no daemon runs is
    /// served by the next one.
    @Test func aClientThatConnectsDuringARestartIsServedByTheNextDaemon() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory + "/replayd.sock"
            let listening = try listeningUnixSocket(path)
            defer { close(listening) }
            let first = try await TestDaemon.start(in: directory, service: .init(inheritedSocket: listening))
            #expect(first.log.contains("from systemd (replayd)"), "\(first.log)")
            let sequence = try await withWireClient(path) { client in try await client.publish("orders", ["a"]) }
            #expect(sequence == [1])
            #expect(await first.stop() == 0)
            #expect(FileManager.default.fileExists(atPath: path), "the daemon leaves systemd's socket in place")

            // No daemon runs: the connection waits in the socket's backlog, its PUB sent.
            async let waiting = withWireClient(path) { client in try await client.publish("orders", ["b"]) }
            let second = try await TestDaemon.start(in: directory, service: .init(inheritedSocket: listening))
            #expect(try await waiting == [2])
            await second.stop()
        }
    }

    /// A descriptor the daemon cannot serve stops its start, in words; variables meant for
    /// another process are not its own.
    @Test func whatSystemdPassesIsCheckedBeforeItIsServed() throws {
        #expect(try InheritedSocket.from(["LISTEN_PID": "1", "LISTEN_FDS": "1"], pid: 2) == nil)
        #expect(try InheritedSocket.from([:], pid: 2) == nil)
        // Descriptor 3 of this test process is not a listening Unix socket.
        let refusal = #expect(throws: InheritedSocket.Refusal.self) {
            try InheritedSocket.from(["LISTEN_PID": String(getpid()), "LISTEN_FDS": "1", "LISTEN_FDNAMES": "web"], pid: getpid())
        }
        #expect(refusal?.description.contains("'web'") == true)

        #expect(ServiceManagerLink.from([:], pid: 7) == nil)
        #expect(ServiceManagerLink.from(["NOTIFY_SOCKET": "@sd", "WATCHDOG_USEC": "30000000"], pid: 7)?.watchdog == .seconds(30))
        // A watchdog for another process (WATCHDOG_PID) is not this one's.
        let other = ServiceManagerLink.from(["NOTIFY_SOCKET": "/run/n", "WATCHDOG_USEC": "1000", "WATCHDOG_PID": "8"], pid: 7)
        #expect(other?.socket == "/run/n" && other?.watchdog == nil)
    }

    /// With stderr going to journald, each line starts with its syslog priority.
    @Test func journaldReadsEachLinesPriority() async throws {
        let lines = Locked<[String]>([])
        var handler = JournalLogHandler(label: "replayd") { text in lines.withLock { $0.append(text) } }
        handler.logLevel = .debug
        let logger = Logger(label: "replayd") { _ in handler }
        logger.info("ready", metadata: ["streams": "3"])
        logger.warning("slow")
        logger.error("two\nlines")
        #expect(lines.value == ["<6>replayd: ready streams=3\n", "<4>replayd: slow\n", "<3>replayd: two\n<3>replayd: lines\n"])

        try await withTemporaryDirectory { directory in
            let daemon = try await TestDaemon.start(in: directory, service: .init(stderrIsJournal: true))
            await daemon.stop()
            #expect(daemon.log.split(separator: "\n").contains { $0.hasPrefix("<6>replayd: replayd ") && $0.contains(" ready") }, "\(daemon.log)")
            #expect(!daemon.log.contains(" info replayd:"), "no second prefix")
        }
    }

    /// The units in deploy/ as systemd would load them.
    @Test func theUnitsPassSystemdAnalyzeVerify() async throws {
        try await Prerequisite.systemdAnalyze.require()
        try await withTemporaryDirectory { directory in
            let deploy = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../deploy").standardized.path
            for unit in ["replayd.socket", "replayd.service"] {
                // The binary the unit names is this build's (verify checks that it exists).
                let text = try String(contentsOfFile: deploy + "/" + unit, encoding: .utf8)
                    .replacingOccurrences(of: "/usr/bin/replayd", with: try builtExecutable("replayd"))
                try text.write(toFile: directory + "/" + unit, atomically: true, encoding: .utf8)
            }
            let result = try await runProgram(
                "/usr/bin/systemd-analyze", ["verify", directory + "/replayd.socket", directory + "/replayd.service"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.isEmpty, "\(result.stderr)")
        }
    }
}

/// A listening Unix stream socket, as systemd makes one for a `.socket` unit.
func listeningUnixSocket(_ path: String) throws -> Int32 {
    let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw TestFailure("socket: \(errno)") }
    guard withUnixSocketAddress(path, { bind(descriptor, $0, $1) }) == 0, listen(descriptor, 128) == 0 else {
        throw TestFailure("bind/listen \(path): \(errno)")
    }
    return descriptor
}

/// The service manager's end of `NOTIFY_SOCKET`: a datagram socket, read without waiting.
struct NotifyReceiver {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0, withUnixSocketAddress(path, { bind(descriptor, $0, $1) }) == 0 else { throw TestFailure("cannot bind \(path): \(errno)") }
    }

    /// The messages that arrived since the last call.
    func received() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            guard count > 0 else { return messages }
            messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}
