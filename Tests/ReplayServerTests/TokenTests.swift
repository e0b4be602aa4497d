import Crypto
import Foundation
import ReplayAuth
import ReplayTesting
import Testing

/// Scoped tokens on the HTTP door, against the real daemon with `--auth-keys`: what a
/// token's scopes allow and refuse, the tokens that are not accepted at all, and that no
/// refusal changes anything.
@Suite("replayd: scoped tokens on the HTTP door", .timeLimit(.minutes(5)))
struct TokenTests {
    static func base64url(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A key file with an HS256 key and an EdDSA key (with its private half, for minting).
    static func keyFile(in directory: String, secret: Data = Data((0..<32).map { _ in UInt8.random(in: 0...255) })) throws -> String {
        let ed = Curve25519.Signing.PrivateKey()
        let keys: [String: Any] = [
            "keys": [
                ["kid": "hs1", "kty": "oct", "alg": "HS256", "k": base64url(secret)],
                ["kid": "ed1", "kty": "OKP", "crv": "Ed25519", "x": base64url(ed.publicKey.rawRepresentation), "d": base64url(ed.rawRepresentation)],
            ]
        ]
        let path = directory + "/keys-\(UInt32.random(in: 0...UInt32.max)).json"
        try JSONSerialization.data(withJSONObject: keys).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A token minted by `replayctl token`.
    static func mint(_ keys: String, kid: String = "hs1", subject: String, scopes: [String], extra: [String] = []) async throws -> String {
        let result = try await runProgram(
            try builtExecutable("replayctl"), ["token", "--keys", keys, "--kid", kid, "--subject", subject] + scopes.flatMap { ["--scope", $0] } + extra)
        guard result.status == 0 else { throw TestFailure("replayctl token: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    /// The streams and their last sequence numbers, read with sqlite3.
    static func snapshot(_ daemon: TestDaemon) async throws -> String {
        try await Prerequisite.sqlite3.require()
        return try await runProgram("/usr/bin/sqlite3", [daemon.databasePath, "SELECT name, last_seq FROM streams ORDER BY name"]).stdout
    }

    @Test func aTokenForOneTenantReadsAndWritesItsStreamsAndNothingElse() async throws {
        try await withTemporaryDirectory { directory in
            let keys = try Self.keyFile(in: directory)
            try await withHTTP(arguments: ["--auth-keys", keys]) { daemon, http in
                let admin = try await Self.mint(keys, kid: "ed1", subject: "ops", scopes: ["**=read,write,admin"])
                let alice = try await Self.mint(keys, subject: "alice", scopes: ["tenant-a/**=read,write"])
                for stream in ["tenant-a/x", "tenant-b/x"] {
                    #expect(try await http.request("PUT", "/v1/stream/" + stream, headers: Self.bearer(admin) + [("Content-Type", "text/plain")]).status == 201)
                }
                // Writes and reads in its scope.
                let written = try await http.request(
                    "POST", "/v1/stream/tenant-a/x", headers: Self.bearer(alice) + [("Content-Type", "text/plain")], body: "a1")
                #expect(written.status == 204)
                let read = try await http.request("GET", "/v1/stream/tenant-a/x?offset=-1", headers: Self.bearer(alice))
                #expect(read.status == 200)
                #expect(read.text == "a1")
                // Outside it: 403, whether or not the stream exists, and nothing changes.
                let before = try await Self.snapshot(daemon)
                #expect(
                    try await http.request("POST", "/v1/stream/tenant-b/x", headers: Self.bearer(alice) + [("Content-Type", "text/plain")], body: "b").status
                        == 403)
                #expect(try await http.request("GET", "/v1/stream/tenant-b/x?offset=-1", headers: Self.bearer(alice)).status == 403)
                #expect(try await http.request("GET", "/v1/stream/tenant-b/nothing", headers: Self.bearer(alice)).status == 403)
                #expect(try await http.request("DELETE", "/v1/stream/tenant-a/x", headers: Self.bearer(alice)).status == 403)
                #expect(try await http.request("PUT", "/v1/stream/tenant-a/new", headers: Self.bearer(alice)).status == 403)
                #expect(try await http.request("POST", "/v1/stream/tenant-a/x", headers: Self.bearer(alice) + [("Stream-Closed", "true")]).status == 403)
                #expect(try await http.request("GET", "/metrics", headers: Self.bearer(alice)).status == 403)
                #expect(try await http.request("PUT", "/v1/stream/__ds/subscriptions/s", headers: Self.bearer(alice), body: "{}").status == 403)
                #expect(try await Self.snapshot(daemon) == before)

                // The stream list shows what the token may read.
                func names(_ token: String) async throws -> [String] {
                    let listed = try await http.request("GET", "/v1/streams", headers: Self.bearer(token))
                    return ((try JSONSerialization.jsonObject(with: listed.body) as? [[String: Any]]) ?? []).compactMap { $0["name"] as? String }.sorted()
                }
                #expect(try await names(alice) == ["tenant-a/x"])
                #expect(try await names(admin) == ["tenant-a/x", "tenant-b/x"])

                // Each refusal is counted, and logged with who, what and which stream, never the token.
                let metrics = try await http.request("GET", "/metrics", headers: Self.bearer(admin))
                #expect(metrics.status == 200)
                #expect(metrics.text.contains("replay_http_denied_total 8"), "\(metrics.text.split(separator: "\n").filter { $0.contains("denied") })")
                #expect(daemon.log.contains("denied 403: alice asked for write on 'tenant-b/x'"))
                #expect(!daemon.log.contains(alice))
            }
        }
    }

    @Test func tokensThatAreNotAcceptedGet401AndChangeNothing() async throws {
        try await withTemporaryDirectory { directory in
            let secret = Data((0..<32).map { _ in UInt8.random(in: 0...255) })
            let keys = try Self.keyFile(in: directory, secret: secret)
            let stranger = try Self.keyFile(in: directory)
            try await withHTTP(arguments: ["--auth-keys", keys]) { daemon, http in
                let admin = try await Self.mint(keys, subject: "ops", scopes: ["**=read,write,admin"])
                _ = try await http.request("PUT", "/v1/stream/tenant-a/x", headers: Self.bearer(admin) + [("Content-Type", "text/plain")])
                let valid = try await Self.mint(keys, subject: "alice", scopes: ["tenant-a/**=read,write"])
                let parts = valid.split(separator: ".").map(String.init)
                // Its payload rewritten to reach every stream, the signature kept.
                let widened = #"{"sub":"alice","exp":\#(Int(Date().timeIntervalSince1970) + 600),"scopes":[{"streams":"**","ops":["read","write","admin"]}]}"#
                let expired = try await TokenKeys.load(keys, signing: true).sign(
                    .init(sub: "alice", expires: Date() - 60, scopes: [.init(streams: "tenant-a/**", ops: ["write"])]), kid: "hs1")
                // Signed with the HS256 key's own secret, but claiming EdDSA, or marking a
                // header extension critical (both found by the token fuzzer).
                func hs256(_ header: String) -> String {
                    let signed = Self.base64url(Data(header.utf8)) + "." + parts[1]
                    let mac = HMAC<SHA256>.authenticationCode(for: Data(signed.utf8), using: SymmetricKey(data: secret))
                    return signed + "." + Self.base64url(Data(mac))
                }
                let refused: [(String, String)] = [
                    ("claiming another algorithm than its key's", hs256(#"{"alg":"EdDSA","kid":"hs1","typ":"JWT"}"#)),
                    ("with a critical header extension", hs256(#"{"alg":"HS256","kid":"hs1","crit":["exp"],"exp":1}"#)),
                    ("none", ""),
                    ("expired", expired),
                    ("not yet valid", try await Self.mint(keys, subject: "alice", scopes: ["tenant-a/**=write"], extra: ["--not-before", "3600"])),
                    ("signed by a key the daemon does not have", try await Self.mint(stranger, subject: "alice", scopes: ["tenant-a/**=write"])),
                    (
                        "naming another key than it was signed with",
                        [Self.base64url(Data(#"{"alg":"HS256","kid":"ed1","typ":"JWT"}"#.utf8)), parts[1], parts[2]].joined(separator: ".")
                    ),
                    ("alg none", [Self.base64url(Data(#"{"alg":"none","kid":"hs1","typ":"JWT"}"#.utf8)), parts[1], ""].joined(separator: ".")),
                    ("a tampered payload", [parts[0], Self.base64url(Data(widened.utf8)), parts[2]].joined(separator: ".")),
                    ("without a key id", [Self.base64url(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8)), parts[1], parts[2]].joined(separator: ".")),
                    ("not a JWT", "hello"),
                ]
                let before = try await Self.snapshot(daemon)
                for (what, token) in refused {
                    let headers = token.isEmpty ? [] : Self.bearer(token)
                    let answer = try await http.request("POST", "/v1/stream/tenant-a/x", headers: headers + [("Content-Type", "text/plain")], body: "x")
                    #expect(answer.status == 401, "\(what): \(answer.text)")
                    #expect(answer["WWW-Authenticate"] == "Bearer realm=\"replay\"")
                }
                #expect(try await Self.snapshot(daemon) == before)
                // Keys rotate by being added: both of the file's keys verify.
                let edToken = try await Self.mint(keys, kid: "ed1", subject: "alice", scopes: ["tenant-a/**=write"])
                #expect(
                    try await http.request("POST", "/v1/stream/tenant-a/x", headers: Self.bearer(edToken) + [("Content-Type", "text/plain")], body: "y").status
                        == 204)
                #expect(
                    try await http.request("POST", "/v1/stream/tenant-a/x", headers: Self.bearer(valid) + [("Content-Type", "text/plain")], body: "z").status
                        == 204)
            }
        }
    }

    @Test func theDaemonsOwnTokenStaysTheSimplestCase() async throws {
        try await withTemporaryDirectory { directory in
            let keys = try Self.keyFile(in: directory)
            try await withHTTP(arguments: ["--auth-keys", keys, "--http-token", "operator-secret"]) { _, http in
                let created = try await http.request("PUT", "/v1/stream/any/thing", headers: Self.bearer("operator-secret"))
                #expect(created.status == 201)
                #expect(try await http.request("GET", "/metrics", headers: Self.bearer("operator-secret")).status == 200)
                // The page itself is open (its data calls are not).
                #expect(try await http.request("GET", "/").status == 200)
                #expect(try await http.request("GET", "/v1/streams").status == 401)
            }
        }
    }

    @Test func aBadKeyFileStopsTheStartInWords() async throws {
        try await withTemporaryDirectory { directory in
            try #"{"keys": [{"kid": "short", "kty": "oct", "k": "c2hvcnQ"}]}"#.write(toFile: directory + "/keys.json", atomically: true, encoding: .utf8)
            let result = try await runProgram(
                try builtExecutable("replayd"),
                ["--socket", directory + "/r.sock", "--db", directory + "/r.sqlite", "--http", "127.0.0.1:0", "--auth-keys", directory + "/keys.json"])
            #expect(result.status == 1)
            #expect(result.stderr.contains("key 'short'") && result.stderr.contains("at least 32 bytes"), "\(result.stderr)")
        }
    }
}
