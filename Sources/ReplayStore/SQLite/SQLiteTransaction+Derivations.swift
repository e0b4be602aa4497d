import Foundation
import GRDB
import ReplayModel

/// Derivations' rows (migrations/0012_derivations.sql); their outputs are inserted with
/// every other event (`EventInserts`).
extension SQLiteTransaction {
    func derivation(stream: Int64, name: String) throws -> Derivation? {
        let row = try Row.fetchOne(db, sql: "SELECT * FROM derivations WHERE stream_id = ?", arguments: [stream])
        return try row.map { try Self.derivation($0, name: name) }
    }

    func writeDerivation(stream: Int64, _ derivation: Derivation) throws {
        try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO derivations
                    (stream_id, definition, positions, state, status, error, processed, errors, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            stream, derivation.spec.json, derivation.positionsJSON, derivation.state, derivation.status.rawValue, derivation.error,
            Int64(clamping: derivation.processed), Int64(clamping: derivation.errors), derivation.createdAt, derivation.updatedAt,
        ])
    }

    /// Every derivation with its stream's name, as last committed.
    static func derivations(_ db: Database) throws -> [Derivation] {
        try Row.fetchAll(db, sql: "SELECT d.*, s.name AS stream FROM derivations AS d JOIN streams AS s ON s.id = d.stream_id ORDER BY s.name")
            .map { try derivation($0, name: $0["stream"]) }
    }

    static func derivation(_ row: Row, name: String) throws -> Derivation {
        try Derivation(
            stream: name, definition: row["definition"], positions: row["positions"], state: row["state"], status: row["status"],
            error: row["error"], processed: row["processed"], errors: row["errors"], createdAt: row["created_at"], updatedAt: row["updated_at"])
    }
}
