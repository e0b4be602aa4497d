import Foundation
import NIOCore
import PostgresNIO
import ReplayModel

/// Subscriptions' rows and the signing key (migrations/postgres/0003_subscriptions.sql).
extension PostgresTransaction {
    func writeSubscription(_ row: SubscriptionRow) throws {
        try flush()
        try session.query(
            """
            INSERT INTO subscriptions (id, config, state, updated_at) VALUES (\(row.id), \(row.config), \(row.state), \(Timestamp.millis(Date())))
            ON CONFLICT (id) DO UPDATE SET config = excluded.config, state = excluded.state, updated_at = excluded.updated_at
            """)
    }

    func deleteSubscription(_ id: String) throws {
        try flush()
        try session.query("DELETE FROM subscriptions WHERE id = \(id)")
    }

    /// Two daemons starting together: the second's insert waits for the first's commit,
    /// does nothing, and reads the first's key.
    func signingKey(orInsert candidate: SigningKey, createdAt: Int64) throws -> SigningKey {
        try flush()
        try session.query(
            """
            INSERT INTO signing_keys (name, kid, private_key, created_at)
            VALUES ('webhook', \(candidate.kid), \(ByteBuffer(bytes: candidate.privateKey)), \(createdAt))
            ON CONFLICT (name) DO NOTHING
            """)
        let rows = try session.query("SELECT kid, private_key FROM signing_keys WHERE name = 'webhook'")
        guard let row = rows.rows.first else { return candidate }
        let (kid, key) = try row.decode((String, ByteBuffer).self)
        return SigningKey(kid: kid, privateKey: Data(key.readableBytesView))
    }

    static func subscriptions(_ session: PostgresSession) throws -> [SubscriptionRow] {
        try session.query("SELECT id, config, state FROM subscriptions ORDER BY id").rows.map {
            let (id, config, state) = try $0.decode((String, String, String).self)
            return SubscriptionRow(id: id, config: config, state: state)
        }
    }
}
