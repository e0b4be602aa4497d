import Foundation
import ReplayCore
import ReplaySync

/// The PostgreSQL server the tests use: `$REPLAY_TEST_POSTGRES` if set (CI starts a
/// throwaway cluster and sets it), else a throwaway cluster this test process starts with
/// `tools/postgres-cluster.sh` and stops when it exits. Never skipped: without PostgreSQL
/// installed, the tests that need it fail and say so.
public enum TestPostgres {
    /// The server's URL (its database `replay`).
    public static func serverURL() async throws -> String {
        try await shared.value
    }

    private static let shared = Task<String, any Error> {
        if let url = ProcessInfo.processInfo.environment["REPLAY_TEST_POSTGRES"] { return url }
        let values = try await runCluster(["start"])
        guard let url = values["REPLAY_TEST_POSTGRES"], let directory = values["REPLAY_TEST_POSTGRES_DIR"] else {
            throw TestFailure("tools/postgres-cluster.sh start printed no URL")
        }
        clusterDirectory.withLock { $0 = directory }
        atexit {
            guard let directory = TestPostgres.clusterDirectory.value else { return }
            _ = system("bash '\(toolScript("postgres-cluster.sh"))' stop '\(directory)'")
        }
        return url
    }

    private static let clusterDirectory = Locked<String?>(nil)

    /// A new, empty database on the server, for one test; dropped when `body` returns.
    public static func withDatabase<T>(_ body: (_ url: String) async throws -> T) async throws -> T {
        let server = try await serverURL()
        let name = "replay_test_\(UInt64.random(in: 0...UInt64.max))"
        try await psql(server, "CREATE DATABASE \(name)")
        let result: Result<T, any Error>
        do {
            // The body's blocking calls to the store run off the cooperative pool.
            result = .success(try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) { try await body(url(server, database: name)) })
        } catch { result = .failure(error) }
        _ = try? await psql(server, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        return try result.get()
    }

    /// `url` with its database replaced.
    public static func url(_ url: String, database: String) -> String {
        guard let slash = url.range(of: "/", options: .backwards) else { return url }
        return url[..<slash.upperBound] + database
    }

    /// Runs one SQL statement with `psql`; its unaligned output.
    @discardableResult
    public static func psql(_ url: String, _ sql: String) async throws -> String {
        let result = try await runProgram("/usr/bin/env", ["psql", url, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql])
        guard result.status == 0 else { throw TestFailure("psql \(sql): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A PostgreSQL server of the test's own (for tests that stop it while daemons use it),
    /// stopped and removed when `body` returns.
    public static func withPrivateServer<T>(_ body: (PrivateServer) async throws -> T) async throws -> T {
        let cluster = try await runCluster(["start"])
        guard let url = cluster["REPLAY_TEST_POSTGRES"], let directory = cluster["REPLAY_TEST_POSTGRES_DIR"] else {
            throw TestFailure("tools/postgres-cluster.sh start printed no URL")
        }
        let result: Result<T, any Error>
        do { result = .success(try await body(PrivateServer(url: url, directory: directory))) } catch { result = .failure(error) }
        _ = try? await runCluster(["stop", directory])
        return try result.get()
    }

    /// A server started for one test.
    public struct PrivateServer: Sendable {
        public let url: String
        let directory: String

        /// Stops the server (connections drop; its data stays).
        public func pause() async throws { try await runCluster(["pause", directory]) }
        /// Starts it again on the same port.
        public func resume() async throws { try await runCluster(["resume", directory]) }
    }

    /// Runs `tools/postgres-cluster.sh` with `arguments`; the variables it printed.
    /// (swift-subprocess: Foundation's `Process` was seen never to reap the script once
    /// the server it started lived on.)
    @discardableResult
    static func runCluster(_ arguments: [String]) async throws -> [String: String] {
        let result = try await runProgram("/bin/bash", [toolScript("postgres-cluster.sh")] + arguments)
        guard result.status == 0 else {
            throw TestFailure(
                "the PostgreSQL tests need a server: set REPLAY_TEST_POSTGRES, or install postgresql with `\(Prerequisite.aptInstall)` "
                    + "(tools/postgres-cluster.sh \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        var values: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") where line.hasPrefix("export ") {
            let pair = line.dropFirst("export ".count).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
        }
        return values
    }
}
