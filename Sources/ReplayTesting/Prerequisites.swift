import Foundation

/// The programs and Python packages the tests use from outside the project, each with the
/// one command that installs it (the README's prerequisite lines name the same). A test
/// whose outside part is missing fails with that command: it is never skipped silently.
public enum Prerequisite: String, Sendable {
    case sqlite3 = "/usr/bin/sqlite3"
    case openssl = "/usr/bin/openssl"
    case curl = "/usr/bin/curl"
    case chromium = "/usr/bin/chromium"
    case prlimit = "/usr/bin/prlimit"
    case socat = "/usr/bin/socat"
    /// Checks the systemd units in deploy/ (no systemd needs to run).
    case systemdAnalyze = "/usr/bin/systemd-analyze"
    /// The PyPI Durable Streams client (`import durable_streams`).
    case durableStreamsClient = "durable_streams"
    case yaml = "yaml"

    /// The README's two prerequisite lines.
    public static let aptInstall =
        "apt-get install -y libsqlite3-dev libjq-dev libssl-dev libjemalloc-dev sqlite3 postgresql chromium socat curl openssl python3-pip python3-yaml python3-cryptography systemd"
    public static let pipInstall = "python3 -m pip install durable-streams"

    var isPythonModule: Bool { !rawValue.hasPrefix("/") }

    /// Fails, naming the install command, unless it is there.
    public func require() async throws {
        if isPythonModule {
            let found = try await runProgram("/usr/bin/env", ["python3", "-c", "import \(rawValue)"])
            guard found.status != 0 else { return }
            let command = self == .durableStreamsClient ? Self.pipInstall : Self.aptInstall
            throw TestFailure("this test needs the Python module '\(rawValue)': install it with `\(command)`")
        }
        guard !FileManager.default.isExecutableFile(atPath: rawValue) else { return }
        throw TestFailure("this test needs \(rawValue): install it with `\(Self.aptInstall)`")
    }
}
