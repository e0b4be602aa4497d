import Crypto
import Foundation

/// Says whether a token was really signed by one of a key file's keys, without replay's
/// token code: the fuzzers' and corpus tests' judge of a forgery. A token the daemon
/// accepts must be genuine here: its signature, as bytes, verifies over its first two
/// segments exactly as sent, with the key its header names and that key's algorithm.
/// (A different spelling of the same signature bytes is no forgery; a different header
/// or payload string with an old signature is.)
public struct TokenOracle: Sendable {
    let secrets: [String: SymmetricKey]
    let publicKeys: [String: Curve25519.Signing.PublicKey]

    /// The keys of an `--auth-keys` file (HS256 `oct` keys and Ed25519 `OKP` keys).
    public init(keyFile path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let list = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["keys"] as? [[String: Any]] else {
            throw TestFailure("\(path): not a key file")
        }
        var secrets: [String: SymmetricKey] = [:]
        var publicKeys: [String: Curve25519.Signing.PublicKey] = [:]
        for key in list {
            guard let kid = key["kid"] as? String else { continue }
            if let k = (key["k"] as? String).flatMap(Self.bytes) { secrets[kid] = SymmetricKey(data: k) }
            if let x = (key["x"] as? String).flatMap(Self.bytes) { publicKeys[kid] = try Curve25519.Signing.PublicKey(rawRepresentation: x) }
        }
        self.secrets = secrets
        self.publicKeys = publicKeys
    }

    public func isGenuine(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Self.bytes(String(parts[0])), let signature = Self.bytes(String(parts[2])),
            let fields = (try? JSONSerialization.jsonObject(with: header)) as? [String: Any], let kid = fields["kid"] as? String
        else { return false }
        let signed = Data("\(parts[0]).\(parts[1])".utf8)
        switch fields["alg"] as? String {
        case "HS256":
            guard let secret = secrets[kid] else { return false }
            return HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: signed, using: secret)
        case "EdDSA":
            guard let key = publicKeys[kid] else { return false }
            return key.isValidSignature(signature, for: signed)
        default:
            return false
        }
    }

    /// Base64url, padded or not, by Foundation's own decoder.
    static func bytes(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
