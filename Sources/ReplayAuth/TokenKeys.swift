import Crypto
import Foundation
import JWTKit
import ReplayModel

/// The keys tokens are verified with (`--auth-keys FILE`), and the claims a token carries.
///
/// The file is JSON, `{"keys": [...]}`, each key a JWK-shaped object with its `kid`:
/// `{"kid": "k1", "kty": "oct", "alg": "HS256", "k": "<base64url secret>"}` or
/// `{"kid": "k2", "kty": "OKP", "crv": "Ed25519", "x": "<base64url public key>"}` (with
/// `"d"`, its private half, for `replayctl token` to sign with; the daemon needs only `x`).
/// Rotation is adding a key: tokens name theirs by `kid`, so old and new both verify until
/// the old one is removed. (jwt-kit's own JWK parser takes no `oct` keys, hence this file.)
public struct TokenKeys: Sendable {
    public let keys: JWTKeyCollection
    /// Each key's id and the one algorithm it verifies (`HS256` or `EdDSA`).
    public let algorithms: [String: String]
    public var kids: Set<String> { Set(algorithms.keys) }

    public struct Problem: Error, CustomStringConvertible {
        public let description: String
    }

    /// The claims replay reads: `sub` (who, for the logs), `exp`, `nbf`, and `scopes`, each
    /// a pattern and its operations: `{"streams": "tenant-a/**", "ops": ["read", "write"]}`.
    public struct Claims: JWTPayload, Equatable {
        public struct Scope: Codable, Sendable, Equatable {
            public var streams: String
            public var ops: [String]

            public init(streams: String, ops: [String]) {
                self.streams = streams
                self.ops = ops
            }
        }

        /// What the token may use, over the daemon's limits for every client: request and
        /// byte rates (`"100/s"`, `"1M/min"`) and how many streams it may have created.
        public struct Limits: Codable, Sendable, Equatable {
            public var requests: String?
            public var bytes: String?
            public var streams: Int?

            public init(requests: String? = nil, bytes: String? = nil, streams: Int? = nil) {
                self.requests = requests
                self.bytes = bytes
                self.streams = streams
            }
        }

        public var sub: SubjectClaim
        public var exp: ExpirationClaim
        public var nbf: NotBeforeClaim?
        public var scopes: [Scope]
        public var limits: Limits?

        public init(sub: String, expires: Date, notBefore: Date? = nil, scopes: [Scope], limits: Limits? = nil) {
            self.sub = SubjectClaim(value: sub)
            self.exp = ExpirationClaim(value: expires)
            self.nbf = notBefore.map { NotBeforeClaim(value: $0) }
            self.scopes = scopes
            self.limits = limits
        }

        public func verify(using algorithm: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
            try nbf?.verifyNotBefore()
        }

        /// The limits the `limits` claim gives; one that does not parse refuses the token.
        public func clientLimits() throws(Problem) -> ClientLimits {
            guard let limits else { return .none }
            func rate(_ text: String?, _ what: String) throws(Problem) -> RateLimit? {
                guard let text else { return nil }
                guard let rate = RateLimit(text) else {
                    throw Problem(description: "the \(what) limit '\(text.prefix(40))' is not a rate such as 100/s or 1M/min")
                }
                return rate
            }
            if let streams = limits.streams, streams < 0 { throw Problem(description: "the streams limit is a count, 0 or more") }
            return ClientLimits(requests: try rate(limits.requests, "requests"), bytes: try rate(limits.bytes, "bytes"), streams: limits.streams)
        }

        /// The grants the scopes give; a scope that does not parse gives none.
        public func grants() throws(Problem) -> [Grant] {
            try scopes.map { scope throws(Problem) in
                guard case .success(let pattern) = StreamPattern.parse(scope.streams) else {
                    throw Problem(description: "the scope '\(scope.streams.prefix(80))' is not a stream pattern")
                }
                var operations = Set<StreamOperation>()
                for op in scope.ops {
                    guard let operation = StreamOperation(rawValue: op) else {
                        throw Problem(description: "'\(op.prefix(20))' is not an operation (read, write, admin, claim)")
                    }
                    operations.insert(operation)
                }
                return Grant(pattern: pattern, operations: operations)
            }
        }
    }

    /// Reads the key file; `signing` keeps the private halves (for `replayctl token`).
    public static func load(_ path: String, signing: Bool = false) async throws(Problem) -> TokenKeys {
        guard let data = FileManager.default.contents(atPath: path) else { throw Problem(description: "--auth-keys \(path): cannot be read") }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let list = object["keys"] as? [[String: Any]], !list.isEmpty
        else { throw Problem(description: "--auth-keys \(path): not {\"keys\": [...]} with at least one key") }
        let keys = JWTKeyCollection()
        var algorithms: [String: String] = [:]
        for key in list {
            guard let kid = key["kid"] as? String, !kid.isEmpty else { throw Problem(description: "--auth-keys \(path): a key without its \"kid\"") }
            switch key["kty"] as? String {
            case "oct":
                guard let secret = (key["k"] as? String).flatMap(Base64URL.decode), secret.count >= 32 else {
                    throw Problem(description: "--auth-keys \(path): key '\(kid)': \"k\" must be a base64url secret of at least 32 bytes")
                }
                guard (key["alg"] as? String ?? "HS256") == "HS256" else {
                    throw Problem(description: "--auth-keys \(path): key '\(kid)': an oct key is HS256")
                }
                await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: JWKIdentifier(string: kid))
            case "OKP":
                guard key["crv"] as? String == "Ed25519", let x = key["x"] as? String, let raw = Base64URL.decode(x) else {
                    throw Problem(description: "--auth-keys \(path): key '\(kid)': an OKP key is Ed25519 with \"x\"")
                }
                do {
                    if signing, let d = (key["d"] as? String).flatMap(Base64URL.decode) {
                        await keys.add(
                            eddsa: EdDSA.PrivateKey(backing: try Curve25519.Signing.PrivateKey(rawRepresentation: d)), kid: JWKIdentifier(string: kid))
                    } else {
                        await keys.add(
                            eddsa: EdDSA.PublicKey(backing: try Curve25519.Signing.PublicKey(rawRepresentation: raw)), kid: JWKIdentifier(string: kid))
                    }
                } catch {
                    throw Problem(description: "--auth-keys \(path): key '\(kid)': \(error)")
                }
            default:
                throw Problem(description: "--auth-keys \(path): key '\(kid)': \"kty\" is \"oct\" (HS256) or \"OKP\" (Ed25519)")
            }
            algorithms[kid] = key["kty"] as? String == "oct" ? "HS256" : "EdDSA"
        }
        return TokenKeys(keys: keys, algorithms: algorithms)
    }

    /// Why a token was not accepted (never echoing the token).
    public enum Refusal: Error, Equatable {
        case missing
        case invalid(String)
    }

    /// The token's principal, if it is well formed, names a known key, is signed by it, and
    /// is within its `nbf`..`exp`.
    public func verify(_ token: String) async throws(Refusal) -> Principal {
        // A token must name its key: a token without a kid would otherwise be tried with
        // the first key of the file.
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(String(parts[0])),
            let fields = (try? JSONSerialization.jsonObject(with: header)) as? [String: Any]
        else { throw .invalid("not a JWT") }
        guard let kid = fields["kid"] as? String, let algorithm = algorithms[kid] else { throw .invalid("its key id is not one of --auth-keys") }
        // The header's algorithm must be its key's: jwt-kit verifies with the key the kid
        // names, whatever `alg` says, and a token should not claim one algorithm and be
        // checked with another (RFC 8725 §3.1). Found by the token fuzzer.
        guard fields["alg"] as? String == algorithm else { throw .invalid("its algorithm is not its key's (\(algorithm))") }
        // No header extension is understood here, so one marked critical refuses the token
        // (RFC 7515 §4.1.11); jwt-kit does not look.
        guard fields["crit"] == nil else { throw .invalid("it has critical header extensions, and replay knows none") }
        let claims: Claims
        do {
            claims = try await keys.verify(token, as: Claims.self)
        } catch let error as JWTError {
            throw .invalid(error.reason ?? "\(error.errorType)")
        } catch {
            throw .invalid("it does not verify")
        }
        do {
            return Principal(name: claims.sub.value, grants: try claims.grants(), limits: try claims.clientLimits())
        } catch {
            throw .invalid(error.description)
        }
    }

    public func sign(_ claims: Claims, kid: String) async throws -> String {
        try await keys.sign(claims, kid: JWKIdentifier(string: kid))
    }
}
