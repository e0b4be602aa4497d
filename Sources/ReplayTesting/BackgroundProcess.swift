import Foundation
import Subprocess
import SystemPackage

/// A program a test starts and leaves running (a worker), its standard output going to a
/// file the test reads while it runs; stopped with any signal. Started with
/// swift-subprocess, as `TestDaemon` is (the reason is there).
public final class BackgroundProcess: Sendable {
    public let pid: Int32
    private let process: ChildProcess
    /// Where its standard output and standard error go.
    public let outputPath: String
    private let ended: Task<Int32, Never>

    public init(_ executable: String, _ arguments: [String], outputPath: String) async throws {
        self.outputPath = outputPath
        let output = try FileDescriptor.open(
            FilePath(outputPath), .writeOnly, options: [.create, .truncate], permissions: [.ownerReadWrite, .groupRead, .otherRead])
        let (spawned, spawnedSink) = AsyncStream.makeStream(of: Result<ChildProcess, any Error>.self)
        ended = Task {
            do {
                let result = try await Subprocess.run(
                    .path(FilePath(executable)), arguments: Arguments(arguments), input: .none,
                    output: .fileDescriptor(output, closeAfterSpawningProcess: false),
                    error: .fileDescriptor(output, closeAfterSpawningProcess: false)
                ) { execution in
                    spawnedSink.yield(.success(ChildProcess(execution.processIdentifier)))
                }
                try? output.close()
                spawnedSink.finish()
                switch result.terminationStatus {
                case .exited(let code): return code
                case .signaled(let signal): return signal
                }
            } catch {
                try? output.close()
                spawnedSink.yield(.failure(error))
                spawnedSink.finish()
                return -1
            }
        }
        guard let outcome = await spawned.first(where: { _ in true }) else { throw TestFailure("\(executable) was not started") }
        process = try outcome.get()
        pid = process.pid
    }

    /// What it wrote so far.
    public var output: String {
        (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    }

    /// Sends `signal` and waits for it to exit; its status (or the signal that ended it).
    @discardableResult
    public func stop(_ signal: Int32 = SIGTERM) async -> Int32 {
        process.send(signal)
        return await ended.value
    }

    /// Waits for it to exit on its own; its status.
    public func waitForExit() async -> Int32 {
        await ended.value
    }

    /// Sends `signal` if it still runs (through its process descriptor: see `ChildProcess`).
    public func signal(_ signal: Int32) {
        process.send(signal)
    }
}
