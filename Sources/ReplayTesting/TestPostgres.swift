import Foundation
import ReplayCore

/// The PostgreSQL server the tests use: `$REPLAY_TEST_POSTGRES` if set (CI starts a
/// throwaway cluster and sets it), else a throwaway cluster this test process starts with
/// `tools/postgres-cluster.sh` and stops when it exits. Never skipped: without PostgreSQL
/// installed, the tests that need it fail and say so.
public enum TestPostgres {
    /// The server's URL (its database `replay`).
    public static func serverURL() throws -> String {
        try server.withLock { server in
            if let url = server { return url }
            let url = try ProcessInfo.processInfo.environment["REPLAY_TEST_POSTGRES"] ?? startCluster()
            server = url
            return url
        }
    }

    /// A new, empty database on the server, for one test; dropped when `body` returns.
    public static func withDatabase<T>(_ body: (_ url: String) async throws -> T) async throws -> T {
        let server = try serverURL()
        let name = "replay_test_\(UInt64.random(in: 0...UInt64.max))"
        try psql(server, "CREATE DATABASE \(name)")
        defer { _ = try? psql(server, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        return try await body(url(server, database: name))
    }

    /// `url` with its database replaced.
    public static func url(_ url: String, database: String) -> String {
        guard let slash = url.range(of: "/", options: .backwards) else { return url }
        return url[..<slash.upperBound] + database
    }

    /// Runs one SQL statement with `psql`; its unaligned output.
    @discardableResult
    public static func psql(_ url: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", url, "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("psql \(sql): \(errorText)") }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static let server = Locked<String?>(nil)
    nonisolated(unsafe) private static var clusterDirectory: String?

    private static func startCluster() throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = [toolScript("postgres-cluster.sh"), "start"]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var values: [String: String] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("export ") {
            let pair = line.dropFirst("export ".count).split(separator: "=", maxSplits: 1)
            if pair.count == 2 { values[String(pair[0])] = String(pair[1]) }
        }
        guard process.terminationStatus == 0, let url = values["REPLAY_TEST_POSTGRES"] else {
            throw TestFailure("the PostgreSQL tests need a server: set REPLAY_TEST_POSTGRES, or install postgresql (tools/postgres-cluster.sh: \(errorText))")
        }
        clusterDirectory = values["REPLAY_TEST_POSTGRES_DIR"]
        atexit {
            guard let directory = TestPostgres.clusterDirectory else { return }
            let stop = Process()
            stop.executableURL = URL(fileURLWithPath: "/bin/bash")
            stop.arguments = [toolScript("postgres-cluster.sh"), "stop", directory]
            try? stop.run()
            stop.waitUntilExit()
        }
        return url
    }
}
