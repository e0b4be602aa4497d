import Foundation
import GRDB
import ReplayModel

/// Subscriptions' rows and the signing key (migrations/0007_subscriptions.sql).
extension SQLiteTransaction {
    func writeSubscription(_ write: SubscriptionWrite, millis: Int64) throws -> SubscriptionWritten {
        switch (write.contents, write.expected) {
        case (let contents?, nil):
            try db.execute(
                sql: "INSERT INTO subscriptions (id, config, state, revision, updated_at) VALUES (?, ?, ?, 1, ?) ON CONFLICT (id) DO NOTHING",
                arguments: [write.id, contents.config, contents.state, millis])
            if try db.changesCount == 1 { return .written(revision: 1) }
        case (let contents?, let expected?):
            try db.execute(
                sql: "UPDATE subscriptions SET config = ?, state = ?, revision = revision + 1, updated_at = ? WHERE id = ? AND revision = ?",
                arguments: [contents.config, contents.state, millis, write.id, expected])
            if try db.changesCount == 1 { return .written(revision: expected + 1) }
        case (nil, let expected):
            try db.execute(sql: "DELETE FROM subscriptions WHERE id = ? AND revision = ?", arguments: [write.id, expected ?? 0])
            if try db.changesCount == 1 { return .written(revision: 0) }
        }
        return .changed(try Self.subscriptions(id: write.id, db).first)
    }

    func signingKey(orInsert candidate: SigningKey, createdAt: Int64) throws -> SigningKey {
        try db.execute(
            sql: "INSERT INTO signing_keys (name, kid, private_key, created_at) VALUES ('webhook', ?, ?, ?) ON CONFLICT (name) DO NOTHING",
            arguments: [candidate.kid, candidate.privateKey, createdAt])
        let row = try Row.fetchOne(db, sql: "SELECT kid, private_key FROM signing_keys WHERE name = 'webhook'")
        guard let row else { return candidate }
        return SigningKey(kid: row["kid"], privateKey: row["private_key"])
    }

    static func subscriptions(id: String?, _ db: Database) throws -> [SubscriptionRow] {
        let rows =
            if let id {
                try Row.fetchAll(db, sql: "SELECT id, config, state, revision FROM subscriptions WHERE id = ?", arguments: [id])
            } else {
                try Row.fetchAll(db, sql: "SELECT id, config, state, revision FROM subscriptions ORDER BY id")
            }
        return rows.map { SubscriptionRow(id: $0["id"], config: $0["config"], state: $0["state"], revision: $0["revision"]) }
    }
}
