import Foundation
import PostgresNIO
import ReplayModel

/// Derivations' rows (migrations/postgres/0007_derivations.sql). A derivation's row is read
/// and written under its stream's row lock (taken up front with the batch's other rows),
/// so the positions a step is compared with are the ones every daemon sees.
extension PostgresTransaction {
    func derivation(stream: Int64, name: String) throws -> Derivation? {
        try requireLocks()
        try flush()
        let rows = try session.query(
            """
            SELECT definition, positions, state, status, error, processed, errors, created_at, updated_at
            FROM derivations WHERE stream_id = \(stream)
            """)
        return try rows.rows.first.map { try Self.derivation($0, name: name) }
    }

    func writeDerivation(stream: Int64, _ derivation: Derivation) throws {
        try requireLocks()
        try flush()
        try session.query(
            """
            INSERT INTO derivations (stream_id, definition, positions, state, status, error, processed, errors, created_at, updated_at)
            VALUES (\(stream), \(derivation.spec.json), \(derivation.positionsJSON), \(derivation.state), \(derivation.status.rawValue),
                \(derivation.error), \(Int64(clamping: derivation.processed)), \(Int64(clamping: derivation.errors)), \(derivation.createdAt),
                \(derivation.updatedAt))
            ON CONFLICT (stream_id) DO UPDATE SET definition = excluded.definition, positions = excluded.positions, state = excluded.state,
                status = excluded.status, error = excluded.error, processed = excluded.processed, errors = excluded.errors,
                updated_at = excluded.updated_at
            """)
    }

    static func derivations(_ session: PostgresSession) throws -> [Derivation] {
        let rows = try session.query(
            """
            SELECT s.name, d.definition, d.positions, d.state, d.status, d.error, d.processed, d.errors, d.created_at, d.updated_at
            FROM derivations AS d JOIN streams AS s ON s.id = d.stream_id ORDER BY s.name
            """)
        return try rows.rows.map { row in
            let c = try row.decode((String, String, String, String?, String, String?, Int64, Int64, Int64, Int64).self)
            return try Derivation(
                stream: c.0, definition: c.1, positions: c.2, state: c.3, status: c.4, error: c.5, processed: c.6, errors: c.7,
                createdAt: c.8, updatedAt: c.9)
        }
    }

    static func derivation(_ row: PostgresRow, name: String) throws -> Derivation {
        let columns = try row.decode((String, String, String?, String, String?, Int64, Int64, Int64, Int64).self)
        return try Derivation(
            stream: name, definition: columns.0, positions: columns.1, state: columns.2, status: columns.3, error: columns.4,
            processed: columns.5, errors: columns.6, createdAt: columns.7, updatedAt: columns.8)
    }
}
