import Foundation
import ReplayTesting
import Testing

/// A CA, a server certificate for 127.0.0.1 and localhost, and a client certificate, made
/// with openssl in `directory`.
struct TestCertificates {
    let directory: String
    var ca: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var clientCertificate: String { directory + "/client.pem" }
    var clientKey: String { directory + "/client.key" }

    static func make(in directory: String) async throws -> TestCertificates {
        try await Prerequisite.openssl.require()
        try await Prerequisite.curl.require()
        let certificates = TestCertificates(directory: directory)
        try await certificates.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", directory + "/ca.key",
            "-out", certificates.ca, "-days", "2", "-subj", "/CN=replay test CA",
        ])
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        try await certificates.issue("server", subject: "/CN=localhost", extensions: directory + "/san.ext")
        try await certificates.issue("client", subject: "/CN=worker-1", extensions: nil)
        return certificates
    }

    /// A new key and certificate for `name`, signed by the CA (a new serial each time).
    func issue(_ name: String, subject: String, extensions: String?) async throws {
        try await openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", "\(directory)/\(name).key.new",
            "-out", "\(directory)/\(name).csr", "-subj", subject,
        ])
        try await openssl(
            [
                "x509", "-req", "-in", "\(directory)/\(name).csr", "-CA", ca, "-CAkey", directory + "/ca.key", "-CAcreateserial", "-out",
                "\(directory)/\(name).pem.new", "-days", "2",
            ] + (extensions.map { ["-extfile", $0] } ?? []))
        // Renamed into place, as a certificate renewal does.
        try? FileManager.default.removeItem(atPath: "\(directory)/\(name).pem")
        try? FileManager.default.removeItem(atPath: "\(directory)/\(name).key")
        try FileManager.default.moveItem(atPath: "\(directory)/\(name).pem.new", toPath: "\(directory)/\(name).pem")
        try FileManager.default.moveItem(atPath: "\(directory)/\(name).key.new", toPath: "\(directory)/\(name).key")
    }

    /// The serial number of a PEM certificate, or of the one a server at `port` presents.
    func serial(ofFile path: String) async throws -> String {
        try await runProgram("/usr/bin/openssl", ["x509", "-noout", "-serial", "-in", path]).stdout
    }

    func serial(servedAt port: Int) async throws -> String {
        let presented = try await runProgram(
            "/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-CAfile", ca, "-showcerts"], stdin: "")
        return try await runProgram("/usr/bin/openssl", ["x509", "-noout", "-serial"], stdin: presented.stdout).stdout
    }

    private func openssl(_ arguments: [String]) async throws {
        let result = try await runProgram("/usr/bin/openssl", arguments)
        guard result.status == 0 else { throw TestFailure("openssl \(arguments.joined(separator: " ")): \(result.stderr)") }
    }
}

/// curl against the daemon; its exit status, and what `--write-out` and the body printed.
func curl(_ arguments: [String]) async throws -> (status: Int32, stdout: String, stderr: String) {
    try await runProgram("/usr/bin/curl", ["--silent", "--show-error", "--max-time", "60"] + arguments)
}

/// The HTTP door over real TLS: curl trusts it only with the CA, mutual TLS refuses a client
/// without a certificate, HTTP/2 carries SSE and many readers on one connection, and a
/// certificate renewed on disk is served after SIGHUP while a reader stays connected.
@Suite("replayd: TLS and HTTP/2 on the HTTP door", .timeLimit(.minutes(5)))
struct TLSTests {
    static func withTLS(
        clientCA: Bool = false, arguments extra: [String] = [], _ body: (TestDaemon, TestCertificates, String) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in
            let certificates = try await TestCertificates.make(in: directory)
            let arguments =
                ["--http", "127.0.0.1:0", "--tls-cert", certificates.serverCertificate, "--tls-key", certificates.serverKey]
                + (clientCA ? ["--tls-client-ca", certificates.ca] : []) + extra
            let daemon = try await TestDaemon.start(in: directory, arguments: arguments)
            do {
                let address = try await daemon.httpAddress()
                try await body(daemon, certificates, "https://" + address)
                await daemon.stop()
            } catch {
                await daemon.stop()
                throw error
            }
        }
    }

    @Test func curlTrustsTheDoorWithTheCAAndOnlyWithIt() async throws {
        try await Self.withTLS { _, certificates, base in
            let created = try await curl([
                "--cacert", certificates.ca, "-X", "PUT", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", base + "/v1/stream/a",
            ])
            #expect(created.stdout == "201 2", "HTTP/2 by ALPN: \(created.stderr)")
            let old = try await curl(["--cacert", certificates.ca, "--http1.1", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", base + "/v1/stream/a"])
            #expect(old.stdout == "200 1.1", "HTTP/1.1 on the same port")
            let untrusted = try await curl(["-o", "/dev/null", base + "/v1/stream/a"])
            #expect(untrusted.status == 60, "without the CA, the certificate is not trusted: \(untrusted.stderr)")
            let plain = try await curl(["-o", "/dev/null", base.replacingOccurrences(of: "https://", with: "http://") + "/v1/stream/a"])
            #expect(plain.status != 0, "no plain HTTP on the TLS port")
            // The stream's Location says https.
            let located = try await curl(["--cacert", certificates.ca, "-X", "PUT", "-D", "-", "-o", "/dev/null", base + "/v1/stream/b"])
            #expect(located.stdout.lowercased().contains("location: \(base)/v1/stream/b"))
        }
    }

    @Test func mutualTLSRefusesAClientWithoutACertificate() async throws {
        try await Self.withTLS(clientCA: true) { _, certificates, base in
            let refused = try await curl(["--cacert", certificates.ca, "-X", "PUT", "-o", "/dev/null", base + "/v1/stream/a"])
            #expect(refused.status != 0, "no client certificate: \(refused.stdout)")
            let served = try await curl([
                "--cacert", certificates.ca, "--cert", certificates.clientCertificate, "--key", certificates.clientKey, "-X", "PUT", "-o", "/dev/null",
                "-w", "%{http_code}", base + "/v1/stream/a",
            ])
            #expect(served.stdout == "201", "\(served.stderr)")
            // A certificate its CA did not sign is refused too.
            try FileManager.default.createDirectory(atPath: certificates.directory + "/other", withIntermediateDirectories: true)
            let stranger = try await TestCertificates.make(in: certificates.directory + "/other")
            let foreign = try await curl([
                "--cacert", certificates.ca, "--cert", stranger.clientCertificate, "--key", stranger.clientKey, "-o", "/dev/null", base + "/v1/stream/a",
            ])
            #expect(foreign.status != 0)
        }
    }

    @Test func http2CarriesManySSEReadersOnOneConnection() async throws {
        try await Self.withTLS { _, certificates, base in
            _ = try await curl(["--cacert", certificates.ca, "-X", "PUT", "-H", "Content-Type: text/plain", base + "/v1/stream/live"])
            // Eight live readers, more than a browser's six HTTP/1.1 connections, multiplexed
            // by curl on one HTTP/2 connection; each ends when the stream is closed.
            let readers = 8
            let urls = (0..<readers).flatMap { reader in
                ["-o", "\(certificates.directory)/reader-\(reader).txt", base + "/v1/stream/live?offset=now&live=sse"]
            }
            async let transfers = curl(["--cacert", certificates.ca, "--http2", "--parallel", "--parallel-max", "20", "-w", "%{num_connects}\n"] + urls)
            try await eventually("eight SSE readers") {
                try await curl(["--cacert", certificates.ca, base + "/metrics"]).stdout.contains("replay_http_sse_readers \(readers).0")
            }
            _ = try await curl(["--cacert", certificates.ca, "-X", "POST", "-H", "Content-Type: text/plain", "--data", "hello", base + "/v1/stream/live"])
            _ = try await curl(["--cacert", certificates.ca, "-X", "POST", "-H", "Stream-Closed: true", base + "/v1/stream/live"])
            let finished = try await transfers
            #expect(finished.status == 0, "\(finished.stderr)")
            let connects = finished.stdout.split(separator: "\n").compactMap { Int($0) }
            #expect(connects.count == readers)
            #expect(connects.reduce(0, +) == 1, "one connection for all: \(connects)")
            for reader in 0..<readers {
                let text = try String(contentsOfFile: "\(certificates.directory)/reader-\(reader).txt", encoding: .utf8)
                #expect(text.contains("data:hello"), "reader \(reader): \(text)")
                #expect(text.contains(#""streamClosed":true"#))
            }
        }
    }

    /// POSTs multiplexed on one HTTP/2 connection, and one over HTTP/1.1 with TLS, are each
    /// taken on their event loop (`InlineAppendHandler`, in each HTTP/2 stream's pipeline)
    /// and answered as the router would, one to no stream (404) too.
    @Test func postsOverHTTP2AreAnsweredOnTheirEventLoop() async throws {
        try await Self.withTLS { _, certificates, base in
            _ = try await curl(["--cacert", certificates.ca, "-X", "PUT", "-H", "Content-Type: text/plain", base + "/v1/stream/h2"])
            let posts = 6
            let urls = (0..<posts).flatMap { _ in ["-o", "/dev/null", base + "/v1/stream/h2"] }
            let sent = try await curl(
                [
                    "--cacert", certificates.ca, "--http2", "--parallel", "-X", "POST", "-H", "Content-Type: text/plain", "--data", "x", "-w",
                    "%{http_code} %{http_version} %{num_connects}\n",
                ]
                    + urls)
            #expect(sent.status == 0, "\(sent.stderr)")
            let answers = sent.stdout.split(separator: "\n").map { $0.split(separator: " ") }
            #expect(answers.count == posts)
            #expect(answers.allSatisfy { $0.first == "204" && $0.dropFirst().first == "2" }, "\(answers)")
            #expect(answers.compactMap { $0.last.flatMap { Int($0) } }.reduce(0, +) == 1, "one connection for all")
            let http1 = try await curl([
                "--cacert", certificates.ca, "--http1.1", "-X", "POST", "-H", "Content-Type: text/plain", "--data", "y", "-o", "/dev/null", "-w",
                "%{http_code}",
                base + "/v1/stream/h2",
            ])
            #expect(http1.stdout == "204")
            let missing = try await curl([
                "--cacert", certificates.ca, "--http2", "-X", "POST", "-H", "Content-Type: text/plain", "--data", "z", base + "/v1/stream/missing",
            ])
            #expect(missing.stdout.contains("no stream named 'missing'"))
            let all = try await curl(["--cacert", certificates.ca, base + "/v1/stream/h2?offset=-1"])
            #expect(all.stdout == String(repeating: "x", count: posts) + "y")
            let metrics = try await curl(["--cacert", certificates.ca, base + "/metrics"]).stdout
            #expect(metrics.contains("replay_http_appends_inline_total \(posts + 2)"), "every plain POST taken on its event loop")
        }
    }

    @Test func sighupServesARenewedCertificateWhileAReaderStaysConnected() async throws {
        try await Self.withTLS { daemon, certificates, base in
            let port = Int(base.split(separator: ":").last ?? "") ?? 0
            _ = try await curl(["--cacert", certificates.ca, "-X", "PUT", "-H", "Content-Type: text/plain", base + "/v1/stream/live"])
            let before = try await certificates.serial(servedAt: port)
            #expect(before == (try await certificates.serial(ofFile: certificates.serverCertificate)))
            async let reader = curl(["--cacert", certificates.ca, "-N", base + "/v1/stream/live?offset=now&live=sse"])
            try await eventually("the SSE reader") {
                try await curl(["--cacert", certificates.ca, base + "/metrics"]).stdout.contains("replay_http_sse_readers 1.0")
            }
            // Renewed on disk, then SIGHUP: new handshakes get the new certificate.
            try await certificates.issue("server", subject: "/CN=localhost", extensions: certificates.directory + "/san.ext")
            let renewed = try await certificates.serial(ofFile: certificates.serverCertificate)
            #expect(renewed != before)
            daemon.signal(SIGHUP)
            try await eventually("the renewed certificate is served") { try await certificates.serial(servedAt: port) == renewed }
            // The reader connected before is still there, and gets what comes next.
            _ = try await curl(["--cacert", certificates.ca, "-X", "POST", "-H", "Content-Type: text/plain", "--data", "after", base + "/v1/stream/live"])
            _ = try await curl(["--cacert", certificates.ca, "-X", "POST", "-H", "Stream-Closed: true", base + "/v1/stream/live"])
            let read = try await reader
            #expect(read.stdout.contains("data:after"), "\(read.stdout) \(read.stderr)")
            #expect(daemon.log.contains("SIGHUP: TLS certificate and key read again"))
        }
    }

    @Test func aConnectionThatNeverFinishesItsHandshakeIsClosed() async throws {
        try await Self.withTLS(arguments: ["--http-header-timeout", "1"]) { daemon, certificates, base in
            let port = Int(base.split(separator: ":").last ?? "") ?? 0
            // One sends nothing; one sends the start of a ClientHello and stops.
            let silent = try #require(SlowClientTests.halfRequest(port: port, ""))
            let partial = try #require(SlowClientTests.halfRequest(port: port, "\u{16}\u{03}\u{01}\u{02}\u{10}\u{01}"))
            defer {
                close(silent)
                close(partial)
            }
            try await eventually("the server closes both") { SlowClientTests.isClosed(silent) && SlowClientTests.isClosed(partial) }
            // The door serves a client that does its handshake, and counted the two.
            let metrics = try await curl(["--cacert", certificates.ca, base + "/metrics"])
            #expect(metrics.stdout.contains("replay_http_tls_handshake_timeouts_total 2"), "\(metrics.stderr)")
            #expect(daemon.isRunning)
        }
    }

    @Test func missingOrBadCertificateFilesAreRefusedAtStart() async throws {
        try await withTemporaryDirectory { directory in
            try "not a certificate".write(toFile: directory + "/bad.pem", atomically: true, encoding: .utf8)
            let result = try await runProgram(
                try builtExecutable("replayd"),
                [
                    "--socket", directory + "/r.sock", "--db", directory + "/r.sqlite", "--http", "127.0.0.1:0", "--tls-cert", directory + "/bad.pem",
                    "--tls-key", directory + "/missing.key",
                ])
            #expect(result.status == 1)
            #expect(result.stderr.contains("--tls-cert \(directory)/bad.pem"), "\(result.stderr)")
            let alone = try await runProgram(try builtExecutable("replayd"), ["--tls-cert", directory + "/bad.pem"])
            #expect(alone.status == 64)
            #expect(alone.stderr.contains("--tls-cert and --tls-key go together"))
        }
    }
}
