import Foundation
import GRDB
import ReplayModel

/// Subscriptions' rows and the signing key (migrations/0007_subscriptions.sql).
extension SQLiteTransaction {
    func writeSubscription(_ row: SubscriptionRow) throws {
        try db.execute(
            sql: """
                INSERT INTO subscriptions (id, config, state, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET config = excluded.config, state = excluded.state, updated_at = excluded.updated_at
                """,
            arguments: [row.id, row.config, row.state, Timestamp.millis(Date())])
    }

    func deleteSubscription(_ id: String) throws {
        try db.execute(sql: "DELETE FROM subscriptions WHERE id = ?", arguments: [id])
    }

    func signingKey(orInsert candidate: SigningKey, createdAt: Int64) throws -> SigningKey {
        try db.execute(
            sql: "INSERT INTO signing_keys (name, kid, private_key, created_at) VALUES ('webhook', ?, ?, ?) ON CONFLICT (name) DO NOTHING",
            arguments: [candidate.kid, candidate.privateKey, createdAt])
        let row = try Row.fetchOne(db, sql: "SELECT kid, private_key FROM signing_keys WHERE name = 'webhook'")
        guard let row else { return candidate }
        return SigningKey(kid: row["kid"], privateKey: row["private_key"])
    }

    static func subscriptions(_ db: Database) throws -> [SubscriptionRow] {
        try Row.fetchAll(db, sql: "SELECT id, config, state FROM subscriptions ORDER BY id").map {
            SubscriptionRow(id: $0["id"], config: $0["config"], state: $0["state"])
        }
    }
}
