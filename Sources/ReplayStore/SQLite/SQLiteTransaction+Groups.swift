import Foundation
import GRDB

/// Consumer groups in SQLite: a row per group, a row per pending event, a row per dead
/// letter (`migrations/0006_consumer_groups.sql`).
extension SQLiteTransaction {
    /// The group's row, with its held first deliveries as runs (`HeldRuns`), and a
    /// `group_pending` row for each other pending event that changed since `before`.
    func writeGroup(stream: Int64, _ group: ConsumerGroup, before: [UInt64: PendingDelivery]) throws {
        let ackWait = group.settings.ackWaitMillis
        let heldRuns = HeldRuns.encode(group.pending, ackWait: ackWait)
        // The row is there but for the group's first batch: updated in place, one seek where
        // the upsert takes two, in every batch that hands out or acknowledges. Bound in
        // place (`RawStatement`).
        let update = try RawStatement(
            db.cachedStatement(
                sql: """
                    UPDATE groups SET delivered_seq = ?3, delivered = ?4, redelivered = ?5, dead_lettered = ?6, held_runs = ?7
                    WHERE stream_id = ?1 AND name = ?2
                    """), in: db)
        update.bind(stream, at: 1)
        update.bind(group.name, at: 2)
        update.bind(Int64(group.deliveredSequence), at: 3)
        update.bind(Int64(group.delivered), at: 4)
        update.bind(Int64(group.redelivered), at: 5)
        update.bind(Int64(group.deadLettered), at: 6)
        try update.execute(blob: heldRuns, at: 7)
        if try db.changesCount == 0 {
            try db.cachedStatement(
                sql: """
                    INSERT INTO groups (stream_id, name, ack_wait_ms, max_deliver, dead_letter, delivered_seq,
                                        delivered, redelivered, dead_lettered, created_at, held_runs)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                stream, group.name, ackWait, group.settings.maxDeliver, group.settings.deadLetter,
                Int64(group.deliveredSequence), Int64(group.delivered), Int64(group.redelivered), Int64(group.deadLettered), group.createdAt,
                Data(heldRuns),
            ])
        }
        // A row per other pending event that changed: bound in place (see `RawStatement`),
        // where GRDB's arguments were a fifth of the writer's time in a work queue.
        let isRun = { (delivery: PendingDelivery) in HeldRuns.isHeldFirstDelivery(delivery, ackWait: ackWait) }
        for (sequence, delivery) in group.pending {
            let old = before[sequence]
            let hadRow = old.map { !isRun($0) } ?? false
            if isRun(delivery) {
                if hadRow { try deletePending(stream, group.name, sequence) }
            } else if !hadRow || old != delivery {
                try upsertPending(stream, group.name, sequence, delivery)
            }
        }
        for (sequence, old) in before where group.pending[sequence] == nil && !isRun(old) {
            try deletePending(stream, group.name, sequence)
        }
    }

    private func deletePending(_ stream: Int64, _ name: String, _ sequence: UInt64) throws {
        let statement = try RawStatement(db.cachedStatement(sql: "DELETE FROM group_pending WHERE stream_id = ? AND name = ? AND seq = ?"), in: db)
        statement.bind(stream, at: 1)
        statement.bind(name, at: 2)
        statement.bind(Int64(sequence), at: 3)
        try statement.execute()
    }

    private func upsertPending(_ stream: Int64, _ name: String, _ sequence: UInt64, _ delivery: PendingDelivery) throws {
        let statement = try RawStatement(
            db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO group_pending (stream_id, name, seq, member, last_member, deliveries, due,
                                                          first_delivered, last_delivered)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """), in: db)
        statement.bind(stream, at: 1)
        statement.bind(name, at: 2)
        statement.bind(Int64(sequence), at: 3)
        statement.bind(delivery.member, at: 4)
        statement.bind(delivery.lastMember, at: 5)
        statement.bind(Int64(delivery.deliveries), at: 6)
        statement.bind(delivery.due, at: 7)
        statement.bind(delivery.firstDelivered, at: 8)
        statement.bind(delivery.lastDelivered, at: 9)
        try statement.execute()
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

    /// Groups written before schema `0010` keep every pending event as a row: their held
    /// first deliveries move into runs, once, as the store opens. From then on a held first
    /// delivery never has a row, which `writeGroup` relies on.
    static func moveHeldFirstDeliveriesToRuns(_ db: Database) throws {
        for group in try Row.fetchAll(db, sql: "SELECT stream_id, name, ack_wait_ms FROM groups WHERE held_runs IS NULL") {
            let (stream, name, ackWait): (Int64, String, Int64) = (group["stream_id"], group["name"], group["ack_wait_ms"])
            var pending: [UInt64: PendingDelivery] = [:]
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM group_pending WHERE stream_id = ? AND name = ?", arguments: [stream, name])
            for row in rows { pending[UInt64(row["seq"] as Int64)] = GroupRow.pending(row) }
            for (sequence, delivery) in pending where HeldRuns.isHeldFirstDelivery(delivery, ackWait: ackWait) {
                try db.execute(
                    sql: "DELETE FROM group_pending WHERE stream_id = ? AND name = ? AND seq = ?", arguments: [stream, name, Int64(sequence)])
            }
            try db.execute(
                sql: "UPDATE groups SET held_runs = ? WHERE stream_id = ? AND name = ?",
                arguments: [Data(HeldRuns.encode(pending, ackWait: ackWait)), stream, name])
        }
    }

    /// The stream's groups and their pending events, as committed.
    static func groups(of stream: Int64, _ db: Database) throws -> [String: ConsumerGroup] {
        var groups: [String: ConsumerGroup] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT * FROM groups WHERE stream_id = ?", arguments: [stream]) {
            let group = try GroupRow.group(row)
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
    /// The group and its held first deliveries (`HeldRuns`); its other pending events are
    /// `group_pending` rows, read apart.
    static func group(_ row: Row) throws -> ConsumerGroup {
        var group = ConsumerGroup(
            name: row["name"],
            settings: GroupSettings(ackWaitMillis: row["ack_wait_ms"], maxDeliver: row["max_deliver"], deadLetter: row["dead_letter"]),
            deliveredSequence: UInt64(row["delivered_seq"] as Int64), createdAt: row["created_at"])
        group.delivered = UInt64(row["delivered"] as Int64)
        group.redelivered = UInt64(row["redelivered"] as Int64)
        group.deadLettered = UInt64(row["dead_lettered"] as Int64)
        if let runs = row["held_runs"] as Data? {
            guard let held = HeldRuns.decode([UInt8](runs), ackWait: group.settings.ackWaitMillis) else {
                let stream: Int64 = row["stream_id"]
                throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "the held_runs of group '\(group.name)' (stream id \(stream)) are damaged")
            }
            group.pending = held
        }
        return group
    }

    static func pending(_ row: Row) -> PendingDelivery {
        PendingDelivery(
            member: row["member"], lastMember: row["last_member"], deliveries: row["deliveries"], due: row["due"],
            firstDelivered: row["first_delivered"], lastDelivered: row["last_delivered"])
    }
}
