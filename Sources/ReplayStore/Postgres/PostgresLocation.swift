import Foundation
import PostgresNIO

/// A `postgres://` or `postgresql://` URL, as libpq reads it: `user[:password]@host[:port]/database`,
/// or a Unix socket folder as `?host=/var/run/postgresql`. TLS (`sslmode=require` and up)
/// is refused with a message rather than ignored: replay does not bundle a TLS stack for it.
struct PostgresLocation: Sendable {
    let configuration: PostgresConnection.Configuration
    /// The URL without its password, for logs and messages.
    let redacted: String

    /// `nil` if `text` is not a PostgreSQL URL at all (it is then a SQLite path).
    init?(_ text: String) {
        guard text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") else { return nil }
        guard let url = URLComponents(string: text) else {
            configuration = .init(host: "", username: "", password: nil, database: nil, tls: .disable)
            redacted = text
            failure = "not a URL: \(text)"
            return
        }
        let query = Dictionary((url.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 })
        let user = url.user?.removingPercentEncoding ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres"
        let password = url.password?.removingPercentEncoding
        let path = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        let database = path.isEmpty ? nil : path.removingPercentEncoding
        if let folder = query["host"], folder.hasPrefix("/") {
            let port = url.port ?? 5432
            configuration = .init(unixSocketPath: "\(folder)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        } else {
            configuration = .init(
                host: url.host ?? "localhost", port: url.port ?? 5432, username: user, password: password, database: database,
                tls: .disable)
        }
        var shown = url
        if shown.password != nil { shown.password = "***" }
        redacted = shown.string ?? "postgres://"
        let sslMode = query["sslmode"] ?? "disable"
        failure =
            ["disable", "allow", "prefer"].contains(sslMode)
            ? nil : "sslmode=\(sslMode): replay connects to PostgreSQL without TLS; use a local or tunnelled connection"
    }

    /// Why the URL cannot be used, if it cannot.
    let failure: String?
}
