import Crypto
import Foundation
import JWTKit
import ReplayAuth
import ReplayStore

/// The daemon's Ed25519 key, kept in the database (`signing_keys`), so that receivers'
/// cached public keys stay valid across restarts and daemons sharing a PostgreSQL database
/// sign alike. It signs webhook deliveries (`Webhook-Signature: t=…,kid=…,ed25519=…` over
/// `<t>.<raw body>`, Durable Streams §7) and the callback tokens handed to webhook
/// receivers and pull-wake workers (EdDSA JWTs, through jwt-kit), and is published as a
/// JWK set at `__ds/jwks.json`.
struct SigningKeys: Sendable {
    let kid: String
    private let key: Curve25519.Signing.PrivateKey
    private let tokens: JWTKeyCollection

    /// The key the database keeps, made and kept first if it has none.
    static func load(from store: EventStore) async throws -> SigningKeys {
        let fresh = Curve25519.Signing.PrivateKey()
        let candidate = SigningKey(kid: kid(of: fresh.publicKey), privateKey: fresh.rawRepresentation)
        let kept = try await store.signingKey(candidate: candidate)
        return try await SigningKeys(Curve25519.Signing.PrivateKey(rawRepresentation: kept.privateKey))
    }

    init(_ key: Curve25519.Signing.PrivateKey) async {
        self.key = key
        kid = Self.kid(of: key.publicKey)
        tokens = JWTKeyCollection()
        await tokens.add(eddsa: EdDSA.PrivateKey(backing: key), kid: JWKIdentifier(string: kid))
    }

    /// A stable id: `ds_` and the key's RFC 7638 thumbprint (the SHA-256 of its canonical JWK).
    static func kid(of key: Curve25519.Signing.PublicKey) -> String {
        let canonical = #"{"crv":"Ed25519","kty":"OKP","x":"\#(Base64URL.encode(key.rawRepresentation))"}"#
        return "ds_" + Base64URL.encode(Data(SHA256.hash(data: Data(canonical.utf8))))
    }

    /// The public key as a JWK set (`application/jwk-set+json`).
    var jwks: [String: Any] {
        ["keys": [["kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": kid, "x": Base64URL.encode(key.publicKey.rawRepresentation)]]]
    }

    /// Ed25519 over `message`.
    func sign(_ message: Data) throws -> Data {
        try key.signature(for: message)
    }

    /// The `Webhook-Signature` header of a delivery of `body` at `time`.
    func signature(of body: Data, at time: Date) throws -> String {
        let seconds = Int(time.timeIntervalSince1970)
        var signed = Data("\(seconds).".utf8)
        signed.append(body)
        return "t=\(seconds),kid=\(kid),ed25519=\(Base64URL.encode(try key.signature(for: signed)))"
    }

    // MARK: Callback tokens

    /// What a callback token grants: acting for one wake generation of one subscription.
    struct Claims: JWTPayload {
        let sub: SubjectClaim
        let gen: Int
        let exp: ExpirationClaim

        /// The signature is checked by jwt-kit; expiry is judged by `verify(_:subscription:)`,
        /// which tells an expired token from an invalid one.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func subject(_ subscription: String) -> String { "subscription:\(subscription)" }

    func token(subscription: String, generation: Int, validFor seconds: TimeInterval) async throws -> String {
        let claims = Claims(sub: SubjectClaim(value: Self.subject(subscription)), gen: generation, exp: ExpirationClaim(value: Date() + seconds))
        return try await tokens.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// The generation a token was issued for, if it is this daemon's, for this
    /// subscription, and not expired.
    func verify(_ token: String, subscription: String) async throws(HTTPProblem) -> Int {
        let claims: Claims
        do {
            claims = try await tokens.verify(token, as: Claims.self)
        } catch {
            throw HTTPProblem(.unauthorized, .tokenInvalid, "the callback token is not one this server issued")
        }
        guard claims.sub.value == Self.subject(subscription) else {
            throw HTTPProblem(.unauthorized, .tokenInvalid, "the callback token is for another subscription")
        }
        guard claims.exp.value > Date() else {
            throw HTTPProblem(.unauthorized, .tokenExpired, "the callback token has expired")
        }
        return claims.gen
    }
}
