import Foundation

/// A signed checkpoint: the daemon's statement that stream `stream`'s hash chain had hash
/// `hash` at sequence number `seq`, at `time`, signed with its Ed25519 key (the one its
/// HTTP door publishes at `__ds/jwks.json`, named by `kid`). Whoever keeps one can later
/// show that nothing up to `seq` was changed: the chain recomputed from the events must
/// arrive at `hash` again (`replayctl verify --checkpoint`).
///
/// The daemon appends them to the stream `Checkpoint.stream`, one JSON event each, which
/// anyone who may reach the daemon may read.
public struct Checkpoint: Codable, Sendable, Equatable {
    /// The stream checkpoints are kept in.
    public static let stream = "replay/checkpoints"

    public var stream: String
    public var seq: UInt64
    /// The chain's hash after event `seq`: 64 hex digits.
    public var hash: String
    /// When the daemon signed it: ISO-8601 UTC with milliseconds.
    public var time: String
    /// The signing key's id in the JWK set.
    public var kid: String
    /// Ed25519 over `signedMessage`, base64url without padding.
    public var signature: String

    public init(stream: String, seq: UInt64, hash: String, time: String, kid: String, signature: String = "") {
        self.stream = stream
        self.seq = seq
        self.hash = hash
        self.time = time
        self.kid = kid
        self.signature = signature
    }

    /// What is signed: five lines, UTF-8, no line end after the last:
    /// `replay-checkpoint-v1`, the stream, the sequence number in decimal, the hash, the time.
    public var signedMessage: Data {
        Data("replay-checkpoint-v1\n\(stream)\n\(seq)\n\(hash)\n\(time)".utf8)
    }
}
