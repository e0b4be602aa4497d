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

    /// The held first deliveries of `pending`, as runs. Written with every batch that
    /// changes the group, so it sorts plain numbers (a member's index, not its name), and
    /// finds a name among the first few by comparison (a member's events share its name's
    /// storage, so that is a pointer check) before hashing it.
    static func encode(_ pending: [UInt64: PendingDelivery], ackWait: Int64) -> [UInt8] {
        var names: [String] = []
        var indexes: [String: Int] = [:]
        var held: [(sequence: UInt64, member: Int, time: Int64)] = []
        held.reserveCapacity(pending.count)
        for (sequence, delivery) in pending where isHeldFirstDelivery(delivery, ackWait: ackWait) {
            let name = delivery.lastMember
            let index: Int
            if let found = names.prefix(8).firstIndex(of: name) ?? indexes[name] {
                index = found
            } else {
                index = names.count
                names.append(name)
                if index >= 8 { indexes[name] = index }
            }
            held.append((sequence, index, delivery.firstDelivered))
        }
        held.sort { $0.sequence < $1.sequence }
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
            var next = index + 1
            while next < held.count, held[next].sequence == held[next - 1].sequence &+ 1, held[next].member == first.member,
                held[next].time == first.time
            {
                next += 1
            }
            writer.put(UInt64(first.member))
            writer.put(first.sequence &- end)
            writer.put(UInt64(next - 1 - index))
            writer.put(signed: first.time &- time)
            end = held[next - 1].sequence &+ 1
            time = first.time
            index = next
        }
        return writer.bytes
    }

    /// More than any run a hand-out makes (it gives at most a member's `max_pending`,
    /// 10,000): a longer one is damage, not a reason to fill memory.
    static let maxRun: UInt64 = 1 << 20

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
                let delta = reader.nextSigned(), extra < maxRun, end &+ gap &+ extra >= end
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
