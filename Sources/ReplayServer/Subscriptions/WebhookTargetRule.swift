import Foundation

/// Where a webhook may point (the protocol's SSRF rules, §12): a daemon that POSTs to any
/// URL a client names would let that client reach what only the daemon's host can reach
/// (a cloud metadata service, an admin port on the private network). So: https only, to a
/// host that is not a private, loopback or link-local address; plain http only to
/// `localhost` and 127.0.0.x, for development. `allowPrivate` (`--webhook-allow-private`)
/// lets https and http reach private addresses too, for a daemon whose network is trusted.
/// Names are judged as written: a public name that resolves to a private address is not
/// caught here (the reference server's rule is the same).
struct WebhookTargetRule: Sendable {
    var allowPrivate = false

    func check(_ text: String) throws(HTTPProblem) {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else {
            throw rejected("'\(text.prefix(120))' is not a URL")
        }
        let development = host == "localhost" || Self.octets(host).map { $0[0] == 127 } == true
        switch scheme {
        case "http":
            guard development || (allowPrivate && Self.isPrivate(host)) else {
                throw rejected("http webhook URLs are allowed only to localhost or 127.0.0.x; use https")
            }
        case "https":
            if development && !allowPrivate { throw rejected("a webhook to localhost uses http (for development)") }
            if Self.isPrivate(host) && !allowPrivate {
                throw rejected("webhook URLs must not target private, loopback or link-local addresses (\(host)); --webhook-allow-private permits it")
            }
            if host.contains(":") && !allowPrivate { throw rejected("IPv6 literal webhook hosts are not accepted; use a name") }
        default:
            throw rejected("a webhook URL is https (or http to localhost), not '\(scheme.prefix(20))'")
        }
    }

    private func rejected(_ message: String) -> HTTPProblem {
        HTTPProblem(.badRequest, .webhookURLRejected, message)
    }

    /// RFC 1918, loopback, "this network" and link-local IPv4 (and any IPv6 literal's
    /// loopback or link-local form).
    static func isPrivate(_ host: String) -> Bool {
        if let o = octets(host) {
            return o[0] == 10 || o[0] == 127 || o[0] == 0 || (o[0] == 172 && (16...31).contains(o[1])) || (o[0] == 192 && o[1] == 168)
                || (o[0] == 169 && o[1] == 254)
        }
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        return bare == "::1" || bare.hasPrefix("fe80:") || bare.hasPrefix("fc") || bare.hasPrefix("fd")
    }

    static func octets(_ host: String) -> [Int]? {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        let numbers = parts.compactMap { Int($0) }.filter { (0...255).contains($0) }
        return numbers.count == 4 ? numbers : nil
    }
}
