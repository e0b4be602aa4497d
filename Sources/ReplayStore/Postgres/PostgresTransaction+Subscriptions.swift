import Foundation
import NIOCore
import PostgresNIO
import ReplayModel

/// Subscriptions' rows and the signing key (migrations/postgres/0003_subscriptions.sql).
/// Two daemons writing one row: the second's `UPDATE … WHERE revision = …` waits for the
/// first's commit, then finds the revision moved and changes nothing; it answers with the
/// row as the first left it.
extension PostgresTransaction {
    func writeSubscription(_ write: SubscriptionWrite, millis: Int64) throws -> SubscriptionWritten {
        try requireLocks()
        try flush()
        switch (write.contents, write.expected) {
        case (let contents?, nil):
            let rows = try session.query(
                """
                INSERT INTO subscriptions (id, config, state, revision, updated_at) VALUES (\(write.id), \(contents.config), \(contents.state), 1, \(millis))
                ON CONFLICT (id) DO NOTHING RETURNING revision
                """)
            if !rows.rows.isEmpty { return .written(revision: 1) }
        case (let contents?, let expected?):
            let rows = try session.query(
                """
                UPDATE subscriptions SET config = \(contents.config), state = \(contents.state), revision = revision + 1, updated_at = \(millis)
                WHERE id = \(write.id) AND revision = \(expected) RETURNING revision
                """)
            if !rows.rows.isEmpty { return .written(revision: expected + 1) }
        case (nil, let expected):
            let rows = try session.query("DELETE FROM subscriptions WHERE id = \(write.id) AND revision = \(expected ?? 0) RETURNING id")
            if !rows.rows.isEmpty { return .written(revision: 0) }
        }
        let current = try session.query("SELECT id, config, state, revision FROM subscriptions WHERE id = \(write.id)")
        return .changed(try current.rows.first.map(Self.subscription))
    }

    /// Two daemons starting together: the second's insert waits for the first's commit,
    /// does nothing, and reads the first's key.
    func signingKey(orInsert candidate: SigningKey, createdAt: Int64) throws -> SigningKey {
        try requireLocks()
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

    static func subscriptions(id: String?, _ session: PostgresSession) throws -> [SubscriptionRow] {
        let result =
            if let id {
                try session.query("SELECT id, config, state, revision FROM subscriptions WHERE id = \(id)")
            } else {
                try session.query("SELECT id, config, state, revision FROM subscriptions ORDER BY id")
            }
        return try result.rows.map(subscription)
    }

    static func subscription(_ row: PostgresRow) throws -> SubscriptionRow {
        let (id, config, state, revision) = try row.decode((String, String, String, Int64).self)
        return SubscriptionRow(id: id, config: config, state: state, revision: revision)
    }
}
