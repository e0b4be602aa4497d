import PostgresNIO

/// Consumer groups in PostgreSQL (`migrations/postgres/0002_consumer_groups.sql`). A
/// group is read fresh with its stream, under the stream's lock, in every transaction that
/// touches the stream: another daemon may have handed out or acknowledged its events.
extension PostgresTransaction {
    /// The group's row, and a `group_pending` row for each pending event that changed.
    func writeGroup(stream: Int64, _ group: ConsumerGroup, before: [UInt64: PendingDelivery]) throws {
        let changes = group.pendingChanges(since: before)
        try requireLocks()
        try flush()
        let settings = group.settings
        try session.query(
            """
            INSERT INTO groups (stream_id, name, ack_wait_ms, max_deliver, dead_letter, delivered_seq, delivered, redelivered,
                                dead_lettered, created_at)
            VALUES (\(stream), \(group.name), \(settings.ackWaitMillis), \(settings.maxDeliver), \(settings.deadLetter),
                    \(Int64(group.deliveredSequence)), \(Int64(group.delivered)), \(Int64(group.redelivered)),
                    \(Int64(group.deadLettered)), \(group.createdAt))
            ON CONFLICT (stream_id, name) DO UPDATE SET delivered_seq = excluded.delivered_seq, delivered = excluded.delivered,
                redelivered = excluded.redelivered, dead_lettered = excluded.dead_lettered
            """)
        let removed = changes.compactMap { $0.value == nil ? Int64($0.key) : nil }
        if !removed.isEmpty {
            try session.query("DELETE FROM group_pending WHERE stream_id = \(stream) AND name = \(group.name) AND seq = ANY(\(removed))")
        }
        let written = changes.compactMap { sequence, delivery in delivery.map { (Int64(sequence), $0) } }
        guard !written.isEmpty else { return }
        // One statement for the lot, as the events' INSERT: a round trip per hand-out, not per event.
        // A member id is never empty: '' stands for NULL (a free event) in the array.
        try session.query(
            """
            INSERT INTO group_pending (stream_id, name, seq, member, last_member, deliveries, due, first_delivered, last_delivered)
            SELECT \(stream), \(group.name), u.seq, NULLIF(u.member, ''), u.last_member, u.deliveries, u.due, u.first_delivered,
                   u.last_delivered
            FROM unnest(\(written.map(\.0)), \(written.map { $0.1.member ?? "" }), \(written.map(\.1.lastMember)),
                        \(written.map { Int64($0.1.deliveries) }), \(written.map(\.1.due)), \(written.map(\.1.firstDelivered)),
                        \(written.map(\.1.lastDelivered)))
                 AS u(seq, member, last_member, deliveries, due, first_delivered, last_delivered)
            ON CONFLICT (stream_id, name, seq) DO UPDATE SET member = excluded.member, last_member = excluded.last_member,
                deliveries = excluded.deliveries, due = excluded.due, last_delivered = excluded.last_delivered
            """)
    }

    func deleteGroup(stream: Int64, name: String) throws {
        try requireLocks()
        try flush()
        try session.query("DELETE FROM groups WHERE stream_id = \(stream) AND name = \(name)")
    }

    func insertDeadLetter(_ letter: DeadLetter) throws {
        try requireLocks()
        try flush()
        try session.query(
            """
            INSERT INTO dead_letters (stream, seq, origin, origin_seq, group_name, deliveries, last_member, time)
            VALUES (\(letter.stream), \(Int64(letter.sequence)), \(letter.origin), \(Int64(letter.originSequence)), \(letter.group),
                    \(letter.deliveries), \(letter.lastMember), \(letter.time))
            ON CONFLICT (stream, seq) DO UPDATE SET origin = excluded.origin, origin_seq = excluded.origin_seq,
                group_name = excluded.group_name, deliveries = excluded.deliveries, last_member = excluded.last_member, time = excluded.time
            """)
    }

    /// Fills in the groups, and their pending events, of the streams `names` names by id, in
    /// one query.
    static func loadGroups(of names: [Int64: String], into records: inout [String: Catalog.Record], _ session: some PostgresQuerying) throws {
        guard !names.isEmpty else { return }
        var ids = PostgresBindings()
        ids.append(Array(names.keys))
        let rows = try session.query(
            PostgresQuery(
                unsafeSQL: """
                    SELECT g.stream_id, g.name, g.ack_wait_ms, g.max_deliver, g.dead_letter, g.delivered_seq, g.delivered,
                           g.redelivered, g.dead_lettered, g.created_at,
                           p.seq, p.member, p.last_member, p.deliveries, p.due, p.first_delivered, p.last_delivered
                    FROM groups g LEFT JOIN group_pending p ON p.stream_id = g.stream_id AND p.name = g.name
                    WHERE g.stream_id = ANY($1)
                    """, binds: ids))
        for row in rows.rows {
            let c = row.makeRandomAccess()
            guard let stream = names[try c["stream_id"].decode(Int64.self)] else { continue }
            let name = try c["name"].decode(String.self)
            if records[stream]?.groups[name] == nil {
                var group = ConsumerGroup(
                    name: name,
                    settings: GroupSettings(
                        ackWaitMillis: try c["ack_wait_ms"].decode(Int64.self), maxDeliver: try c["max_deliver"].decode(Int?.self),
                        deadLetter: try c["dead_letter"].decode(String?.self)),
                    deliveredSequence: UInt64(try c["delivered_seq"].decode(Int64.self)), createdAt: try c["created_at"].decode(Int64.self))
                group.delivered = UInt64(try c["delivered"].decode(Int64.self))
                group.redelivered = UInt64(try c["redelivered"].decode(Int64.self))
                group.deadLettered = UInt64(try c["dead_lettered"].decode(Int64.self))
                records[stream]?.groups[name] = group
            }
            guard let sequence = try c["seq"].decode(Int64?.self) else { continue }
            records[stream]?.groups[name]?.pending[UInt64(sequence)] = PendingDelivery(
                member: try c["member"].decode(String?.self), lastMember: try c["last_member"].decode(String.self),
                deliveries: try c["deliveries"].decode(Int.self), due: try c["due"].decode(Int64.self),
                firstDelivered: try c["first_delivered"].decode(Int64.self), lastDelivered: try c["last_delivered"].decode(Int64.self))
        }
    }
}
