import Foundation
import PostgresNIO

/// The PostgreSQL schema, as the ordered SQL files of `migrations/postgres/` (embedded at
/// build time): applied at start, each in its own transaction and recorded in
/// `replay_migrations`, under an advisory lock so that daemons starting together apply
/// them once. A database recording a migration this build does not know was written by a
/// newer version: refused, as with SQLite.
enum PostgresMigrations {
    /// Any number, the same in every daemon: the key of the lock migrations hold.
    private static let lockKey: Int64 = 0x7265_706c_6179  // "replay"

    static func migrate(_ session: PostgresSession, location: String) throws {
        let connection = PinnedConnection(try session.connected())
        try connection.query("BEGIN")
        do {
            // The lock first: two daemons creating the table at once collide even with IF NOT EXISTS.
            try connection.query("SELECT pg_advisory_xact_lock(\(lockKey))")
            try connection.query("CREATE TABLE IF NOT EXISTS replay_migrations (identifier text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            var applied = Set<String>()
            for row in try connection.query("SELECT identifier FROM replay_migrations").rows {
                applied.insert(try row.decode(String.self))
            }
            let known = Set(Migrations.embeddedPostgres.map(\.identifier))
            let unknown = applied.subtracting(known).sorted()
            guard unknown.isEmpty else { throw StoreError.newerSchema(path: location, unknownMigrations: unknown) }
            for (identifier, sql) in Migrations.embeddedPostgres where !applied.contains(identifier) {
                for statement in statements(sql) { try connection.query(PostgresQuery(unsafeSQL: statement)) }
                try connection.query("INSERT INTO replay_migrations (identifier) VALUES (\(identifier))")
            }
            try connection.query("COMMIT")
        } catch {
            _ = try? connection.query("ROLLBACK")
            throw error
        }
    }

    /// A file's statements: each ends with `;` at the end of a line (postgres-nio sends one
    /// statement per query; the files keep to that shape).
    static func statements(_ sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("--") || trimmed.isEmpty { continue }
            current += line + "\n"
            if trimmed.hasSuffix(";") {
                statements.append(current)
                current = ""
            }
        }
        if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { statements.append(current) }
        return statements
    }
}
