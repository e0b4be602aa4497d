import ArgumentParser
import Crypto
import Foundation
import ReplayAuth
import ReplayClient
import ReplayModel

/// `replayctl verify [STREAM…]`: the daemon recomputes hash chains while it serves.
struct Verify: DaemonCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that every stored event is what was written (hash chains).",
        discussion: """
            The daemon recomputes each stream's hash chain from its stored events, page by \
            page beside its writer, which it never holds. A stream may be a pattern \
            (orders/*); none checks every stream. Prints each stream with the events checked; \
            for a broken chain, the first event that does not match, with the hash the chain \
            expects and the one stored, and exits 4.

            With --checkpoint FILE (one checkpoint, as the stream replay/checkpoints holds \
            them) and --jwks FILE (the daemon's key set, saved from its HTTP door's \
            /v1/stream/__ds/jwks.json and kept apart from it): checks the checkpoint's \
            signature with that key, then that the stream's chain, recomputed up to the \
            checkpoint's event, arrives at the checkpoint's hash: nothing up to it was changed.
            """)
    @OptionGroup var connection: ConnectionOptions
    @ParentCommand var root: Replayctl
    @Argument(help: "Streams or patterns to check (default: every stream).") var streams: [String] = []
    @Flag(help: "Print the daemon's reports as JSON.") var json = false
    @Option(help: "A signed checkpoint to check the stream against.", completion: .file()) var checkpoint: String?
    @Option(help: "The daemon's JWK set, saved earlier, to check the checkpoint's signature with.", completion: .file()) var jwks: String?

    func validate() throws {
        if checkpoint != nil {
            guard jwks != nil else { throw ValidationError("--checkpoint needs --jwks: the key to check its signature with") }
            guard streams.isEmpty else { throw ValidationError("--checkpoint names its stream; give no other") }
        }
    }

    func run(with client: ReplayClient) async throws {
        if let checkpoint, let jwks { return try await check(checkpoint: checkpoint, jwks: jwks, with: client) }
        let reports = try await client.verify(streams)
        if json {
            printOut(try StreamTable.json(reports))
        } else {
            printOut(Data(Self.table(reports).utf8))
        }
        let broken = reports.filter { !$0.isIntact }
        for report in broken {
            guard let at = report.broken else { continue }
            printError("replayctl: stream '\(report.stream)' is broken at seq \(at.sequence): expected \(at.expected), found \(at.found)")
        }
        if !broken.isEmpty { throw Exit.brokenChain }
    }

    static func table(_ reports: [ChainReport]) -> String {
        let rows =
            [["STREAM", "EVENTS", "SEQ", "RESULT"]]
            + reports.map { report in
                [
                    report.stream, String(report.events), report.events == 0 ? "-" : "\(report.first)-\(report.last)",
                    report.broken.map { "BROKEN at seq \($0.sequence)" } ?? "ok",
                ]
            }
        // Each column as wide as its widest cell (padding(toLength:) cuts longer ones).
        let widths = (0..<3).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            (0..<3).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ") + "  " + row[3]
        }.joined(separator: "\n") + "\n"
    }

    /// `--checkpoint`: the signature first (a checkpoint the key did not sign proves
    /// nothing), then the chain up to its event.
    private func check(checkpoint path: String, jwks keysPath: String, with client: ReplayClient) async throws {
        let checkpoint: Checkpoint
        do {
            checkpoint = try JSONDecoder().decode(Checkpoint.self, from: try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ValidationError("\(path) is not a checkpoint (one JSON object of replay/checkpoints): \(error)")
        }
        let key = try Self.publicKey(checkpoint.kid, in: keysPath)
        guard let signature = Base64URL.decode(checkpoint.signature), key.isValidSignature(signature, for: checkpoint.signedMessage) else {
            printError("replayctl: the checkpoint's signature is not valid for key \(checkpoint.kid): it was not signed as it reads")
            throw Exit.brokenChain
        }
        let report = try await client.verify([checkpoint.stream], through: checkpoint.seq).first ?? ChainReport(stream: checkpoint.stream)
        if json { printOut(try StreamTable.json(report)) }
        if let broken = report.broken {
            printError(
                "replayctl: stream '\(checkpoint.stream)' is broken at seq \(broken.sequence): expected \(broken.expected), found \(broken.found)")
            throw Exit.brokenChain
        }
        guard report.last == checkpoint.seq, let hash = report.lastHash else {
            printError("replayctl: event \(checkpoint.seq) of stream '\(checkpoint.stream)' is no longer retained; its chain cannot be recomputed")
            throw Exit.brokenChain
        }
        guard hash == checkpoint.hash else {
            printError("replayctl: stream '\(checkpoint.stream)' arrives at \(hash) at seq \(checkpoint.seq), not the checkpoint's \(checkpoint.hash)")
            throw Exit.brokenChain
        }
        if !json {
            printOut(Data("checkpoint \(checkpoint.stream)@\(checkpoint.seq) holds: signed by \(checkpoint.kid), chain recomputed to \(hash)\n".utf8))
        }
    }

    /// The Ed25519 key `kid` of a JWK set file.
    static func publicKey(_ kid: String, in path: String) throws -> Curve25519.Signing.PublicKey {
        struct KeySet: Decodable {
            struct Key: Decodable {
                let kid: String?
                let crv: String?
                let x: String?
            }
            let keys: [Key]
        }
        let set: KeySet
        do {
            set = try JSONDecoder().decode(KeySet.self, from: try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw ValidationError("\(path) is not a JWK set: \(error)")
        }
        guard let jwk = set.keys.first(where: { $0.kid == kid }), jwk.crv == "Ed25519", let x = jwk.x.flatMap(Base64URL.decode),
            let key = try? Curve25519.Signing.PublicKey(rawRepresentation: x)
        else { throw ValidationError("\(path) has no Ed25519 key '\(kid)'") }
        return key
    }
}
