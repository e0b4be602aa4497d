import Foundation
import ReplayAuth
import ReplayTesting
import Testing

/// The fuzzer's token corpus (`Fuzz/corpus/tokens`, grown by `tools/fuzz.sh SECONDS
/// tokens`) replayed against the real daemon, each input as the Authorization header of a
/// POST: the daemon stays up, and only a token its named key really signed (by
/// `TokenOracle`, which shares no code with replay's token checks) writes anything.
@Suite("replayd: the token fuzz corpus", .timeLimit(.minutes(5)))
struct TokenCorpusTests {
    static let keys = repositoryRoot + "/Fuzz/tokens.keys.json"
    static let corpus = repositoryRoot + "/Fuzz/corpus/tokens"

    /// Sends one request with `authorization` as its header's raw bytes; the status, or
    /// `nil` if the server closed the connection without an answer (a header it cannot parse).
    static func post(port: Int, authorization: Data) -> Int? {
        guard let fd = SlowClientTests.halfRequest(port: port, "") else { return nil }
        defer { close(fd) }
        var request = Data("POST /v1/stream/tenant-a/corpus HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ".utf8)
        request += authorization
        request += Data("\r\nContent-Type: text/plain\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var answer = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !answer.contains(0x0A) {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            answer += buffer[0..<count]
        }
        let line = String(decoding: answer.prefix { $0 != 0x0D }, as: UTF8.self).split(separator: " ")
        return line.count >= 2 ? Int(line[1]) : nil
    }

    @Test func noInputCrashesTheDaemonAndOnlyGenuineTokensWrite() async throws {
        let oracle = try TokenOracle(keyFile: Self.keys)
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus).sorted()
        #expect(files.count >= 20)
        try await withHTTP(arguments: ["--auth-keys", Self.keys]) { daemon, http in
            let operator_ = String(decoding: try Data(contentsOf: URL(fileURLWithPath: Self.corpus + "/signed-eddsa-with-limits")), as: UTF8.self)
            #expect(
                try await http.request("PUT", "/v1/stream/tenant-a/corpus", headers: [("Authorization", operator_), ("Content-Type", "text/plain")]).status
                    == 201)
            var written = 0
            var genuine: [String] = []
            for file in files {
                let header = try Data(contentsOf: URL(fileURLWithPath: Self.corpus + "/" + file))
                let status = Self.post(port: http.port, authorization: header)
                let token = BearerToken.from(header: String(decoding: header, as: UTF8.self)) ?? ""
                if let status, (200..<300).contains(status) {
                    #expect(oracle.isGenuine(token), "\(file) was accepted but not signed by the key it names")
                    written += 1
                    genuine.append(file)
                } else {
                    #expect(status == nil || [400, 401, 429].contains(status!), "\(file): \(status.map(String.init) ?? "closed")")
                }
            }
            #expect(genuine.contains("signed-hs256") && genuine.contains("signed-eddsa-with-limits"), "\(genuine)")
            #expect(daemon.isRunning)
            let head = try await http.request("HEAD", "/v1/stream/tenant-a/corpus", headers: [("Authorization", operator_)])
            #expect(head["Stream-Next-Offset"] == String(format: "%016d_0000000000000000", written), "every write was a genuine token's")
        }
    }
}
