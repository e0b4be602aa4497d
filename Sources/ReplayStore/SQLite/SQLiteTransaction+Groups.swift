import GRDB

/// Consumer groups in SQLite: a row per group, a row per pending event, a row per dead
/// letter (`migrations/0006_consumer_groups.sql`).
extension SQLiteTransaction {
    func writeGroup(stream: Int64, _ group: ConsumerGroup, pending changes: [UInt64: PendingDelivery?]) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO groups (stream_id, name, ack_wait_ms, max_deliver, dead_letter, delivered_seq,
                                    delivered, redelivered, dead_lettered, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (stream_id, name) DO UPDATE SET delivered_seq = excluded.delivered_seq,
                    delivered = excluded.delivered, redelivered = excluded.redelivered, dead_lettered = excluded.dead_lettered
                """
        ).execute(arguments: [
            stream, group.name, group.settings.ackWaitMillis, group.settings.maxDeliver, group.settings.deadLetter,
            Int64(group.deliveredSequence), Int64(group.delivered), Int64(group.redelivered), Int64(group.deadLettered), group.createdAt,
        ])
        guard !changes.isEmpty else { return }
        // A row per event handed out, acknowledged or given back: bound in place (see
        // `RawStatement`), where GRDB's arguments were a fifth of the writer's time in a work queue.
        let delete = RawStatement(try db.cachedStatement(sql: "DELETE FROM group_pending WHERE stream_id = ? AND name = ? AND seq = ?"), in: db)
        let upsert = RawStatement(
            try db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO group_pending (stream_id, name, seq, member, last_member, deliveries, due,
                                                          first_delivered, last_delivered)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """), in: db)
        for (sequence, delivery) in changes {
            guard let delivery else {
                delete.bind(stream, at: 1)
                delete.bind(group.name, at: 2)
                delete.bind(Int64(sequence), at: 3)
                try delete.execute()
                continue
            }
            upsert.bind(stream, at: 1)
            upsert.bind(group.name, at: 2)
            upsert.bind(Int64(sequence), at: 3)
            upsert.bind(delivery.member, at: 4)
            upsert.bind(delivery.lastMember, at: 5)
            upsert.bind(Int64(delivery.deliveries), at: 6)
            upsert.bind(delivery.due, at: 7)
            upsert.bind(delivery.firstDelivered, at: 8)
            upsert.bind(delivery.lastDelivered, at: 9)
            try upsert.execute()
        }
    }

    func deleteGroup(stream: Int64, name: String) throws {
        // Its pending rows go with it (ON DELETE CASCADE).
        try db.execute(sql: "DELETE FROM groups WHERE stream_id = ? AND name = ?", arguments: [stream, name])
    }

    func insertDeadLetter(_ letter: DeadLetter) throws {
        try db.execute(
            sql: """
                INSERT OR REPLACE INTO dead_letters (stream, seq, origin, origin_seq, group_name, deliveries, last_member, time)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                letter.stream, Int64(letter.sequence), letter.origin, Int64(letter.originSequence), letter.group, letter.deliveries,
                letter.lastMember, letter.time,
            ])
    }

    /// The stream's groups and their pending events, as committed.
    static func groups(of stream: Int64, _ db: Database) throws -> [String: ConsumerGroup] {
        var groups: [String: ConsumerGroup] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT * FROM groups WHERE stream_id = ?", arguments: [stream]) {
            let group = GroupRow.group(row)
            groups[group.name] = group
        }
        for row in try Row.fetchAll(db, sql: "SELECT * FROM group_pending WHERE stream_id = ?", arguments: [stream]) {
            groups[row["name"]]?.pending[UInt64(row["seq"] as Int64)] = GroupRow.pending(row)
        }
        return groups
    }
}

/// A group's and a pending event's SQLite rows, read.
enum GroupRow {
    static func group(_ row: Row) -> ConsumerGroup {
        var group = ConsumerGroup(
            name: row["name"],
            settings: GroupSettings(ackWaitMillis: row["ack_wait_ms"], maxDeliver: row["max_deliver"], deadLetter: row["dead_letter"]),
            deliveredSequence: UInt64(row["delivered_seq"] as Int64), createdAt: row["created_at"])
        group.delivered = UInt64(row["delivered"] as Int64)
        group.redelivered = UInt64(row["redelivered"] as Int64)
        group.deadLettered = UInt64(row["dead_lettered"] as Int64)
        return group
    }

    static func pending(_ row: Row) -> PendingDelivery {
        PendingDelivery(
            member: row["member"], lastMember: row["last_member"], deliveries: row["deliveries"], due: row["due"],
            firstDelivered: row["first_delivered"], lastDelivered: row["last_delivered"])
    }
}
