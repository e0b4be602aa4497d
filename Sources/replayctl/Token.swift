import ArgumentParser
import Foundation
import ReplayAuth

struct Token: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Mint a scoped token for the HTTP door, from a key file.",
        discussion: """
            Signs a JWT with the key KID of the key file replayd reads with --auth-keys (an \\
            EdDSA key needs its private half, "d", here). Each --scope is PATTERN=OPS: a \\
            stream pattern (tenant-a/**) and operations among read, write, admin and claim, \\
            comma-separated. Prints the token. docs/SECURITY.md.
            """)

    @Option(help: ArgumentHelp("The key file.", valueName: "file")) var keys: String
    @Option(help: ArgumentHelp("The key to sign with.", valueName: "kid")) var kid: String
    @Option(help: ArgumentHelp("Who the token is for (its subject, shown in the daemon's logs).", valueName: "name")) var subject: String
    @Option(help: ArgumentHelp("PATTERN=OPS, repeatable: tenant-a/**=read,write.", valueName: "scope")) var scope: [String] = []
    @Option(help: ArgumentHelp("Seconds it is valid for.", valueName: "seconds")) var ttl: Int = 3600
    @Option(help: ArgumentHelp("Seconds from now before which it is not valid yet.", valueName: "seconds")) var notBefore: Int?
    @Option(help: ArgumentHelp("Requests it may make, such as 100/s or 6000/min (over replayd's --rate-limit-requests).", valueName: "rate"))
    var limitRequests: String?
    @Option(help: ArgumentHelp("Bytes it may send, such as 1M/s (over replayd's --rate-limit-bytes).", valueName: "rate"))
    var limitBytes: String?
    @Option(help: ArgumentHelp("Streams it may have created at once (over replayd's --token-max-streams).", valueName: "count"))
    var limitStreams: Int?

    func validate() throws {
        guard !scope.isEmpty else { throw ValidationError("give at least one --scope PATTERN=OPS") }
        guard ttl > 0 else { throw ValidationError("--ttl takes seconds, more than 0") }
    }

    func run() async throws {
        var scopes: [TokenKeys.Claims.Scope] = []
        for text in scope {
            let parts = text.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { throw ValidationError("--scope takes PATTERN=OPS, such as tenant-a/**=read,write") }
            scopes.append(.init(streams: String(parts[0]), ops: parts[1].split(separator: ",").map(String.init)))
        }
        let limits =
            limitRequests == nil && limitBytes == nil && limitStreams == nil
            ? nil : TokenKeys.Claims.Limits(requests: limitRequests, bytes: limitBytes, streams: limitStreams)
        let claims = TokenKeys.Claims(
            sub: subject, expires: Date() + TimeInterval(ttl), notBefore: notBefore.map { Date() + TimeInterval($0) }, scopes: scopes,
            limits: limits)
        do {
            // The scopes and limits are checked as the daemon will read them.
            _ = try claims.grants()
            _ = try claims.clientLimits()
            let signer = try await TokenKeys.load(keys, signing: true)
            guard signer.kids.contains(kid) else { throw ValidationError("no key '\(kid)' in \(keys)") }
            print(try await signer.sign(claims, kid: kid))
        } catch let problem as TokenKeys.Problem {
            throw ValidationError(problem.description)
        }
    }
}
