import GRDB

/// The schema, as the ordered SQL files of `migrations/` (embedded at build time).
enum Migrations {
    /// A migrator that applies the embedded migrations in order, recording each.
    static func migrator(upTo last: String? = nil) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        for (identifier, sql) in embedded {
            migrator.registerMigration(identifier) { db in try db.execute(sql: sql) }
            if identifier == last { break }
        }
        return migrator
    }

    /// Migrations recorded in the database that this build does not know: the database
    /// was written by a newer version.
    static func unknownMigrations(in db: Database) throws -> [String] {
        let known = Set(embedded.map(\.identifier))
        return try migrator().appliedIdentifiers(db).filter { !known.contains($0) }.sorted()
    }
}
