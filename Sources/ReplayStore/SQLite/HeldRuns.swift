/// The events a consumer group holds on their first delivery, as SQLite stores them: runs
/// in the group's row (`groups.held_runs`), not a `group_pending` row each.
///
/// Why: a work queue hands out and acknowledges every event once. As rows, that was an
/// INSERT and a DELETE per event, each with its foreign key's check and a statement
/// journal: 45 % of the writer's time with four workers sharing a group. A first delivery
/// still held is described by its member, its sequence number and when it was handed out
/// (it is due back that plus the group's `ack_wait`), and a hand-out gives one member a run
/// of consecutive events at one time. So a group's held first deliveries are a handful of
/// runs, a few dozen bytes written with the group's row, which every batch that changes
/// the group writes anyway. Everything else pending (given back, freed, delivered again)
/// keeps its row, where `sqlite3` shows it.
///
/// Layout, in LEB128 varints: the number of member names, each name as its length and its
/// UTF-8 bytes; then per run, in sequence order: its member's index, its first sequence
/// number less the end of the run before (from 0), its length less one, and its hand-out
/// time in ms, zigzag-encoded relative to the run before's (from 0).
enum HeldRuns {
    /// Whether `delivery` is a first delivery its member still holds: what runs store.
    static func isHeldFirstDelivery(_ delivery: PendingDelivery, ackWait: Int64) -> Bool {
        guard let member = delivery.member else { return false }
        return delivery.deliveries == 1 && delivery.lastMember == member && delivery.lastDelivered == delivery.firstDelivered
            && delivery.due == delivery.firstDelivered &+ ackWait
    }

    /// The held first deliveries of `pending`, as runs.
    static func encode(_ pending: [UInt64: PendingDelivery], ackWait: Int64) -> [UInt8] {
        var held = pending.filter { isHeldFirstDelivery($0.value, ackWait: ackWait) }.map { (sequence: $0.key, delivery: $0.value) }
        held.sort { $0.sequence < $1.sequence }
        var members: [String: UInt64] = [:]
        var names: [String] = []
        for (_, delivery) in held where members[delivery.lastMember] == nil {
            members[delivery.lastMember] = UInt64(names.count)
            names.append(delivery.lastMember)
        }
        var writer = VarintWriter(reservingCapacity: 16 + names.count * 8)
        writer.put(UInt64(names.count))
        for name in names {
            writer.put(UInt64(name.utf8.count))
            writer.put(bytes: name.utf8)
        }
        var end: UInt64 = 0
        var time: Int64 = 0
        var index = 0
        while index < held.count {
            let first = held[index]
            var last = index
            while last + 1 < held.count, held[last + 1].sequence == held[last].sequence &+ 1,
                held[last + 1].delivery.lastMember == first.delivery.lastMember,
                held[last + 1].delivery.firstDelivered == first.delivery.firstDelivered
            {
                last += 1
            }
            writer.put(members[first.delivery.lastMember]!)
            writer.put(first.sequence &- end)
            writer.put(UInt64(last - index))
            writer.put(signed: first.delivery.firstDelivered &- time)
            end = held[last].sequence &+ 1
            time = first.delivery.firstDelivered
            index = last + 1
        }
        return writer.bytes
    }

    /// The held first deliveries `bytes` describe; `nil` if they are damaged.
    static func decode(_ bytes: [UInt8], ackWait: Int64) -> [UInt64: PendingDelivery]? {
        var reader = VarintReader(bytes)
        guard let count = reader.next(), count <= UInt64(bytes.count) else { return nil }
        var names: [String] = []
        for _ in 0..<count {
            guard let length = reader.next(), length <= UInt64(bytes.count), let utf8 = reader.take(Int(length)) else { return nil }
            names.append(String(decoding: utf8, as: UTF8.self))
        }
        var held: [UInt64: PendingDelivery] = [:]
        var end: UInt64 = 0
        var time: Int64 = 0
        while !reader.isAtEnd {
            guard let member = reader.next(), member < UInt64(names.count), let gap = reader.next(), let extra = reader.next(),
                let delta = reader.nextSigned(), extra < UInt64(Int32.max)
            else { return nil }
            let first = end &+ gap
            time = time &+ delta
            let name = names[Int(member)]
            let delivery = PendingDelivery(
                member: name, lastMember: name, deliveries: 1, due: time &+ ackWait, firstDelivered: time, lastDelivered: time)
            for offset in 0...extra { held[first &+ offset] = delivery }
            end = first &+ extra &+ 1
        }
        return held
    }
}
