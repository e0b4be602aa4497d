import Foundation
import ReplayModel
import ReplayProtocol
import ReplayStore

/// A stream as every view shows it: INFO and LIST on the socket (and `replayctl top`, which
/// reads them), CONSUMERS and GROUPS, the live page's list, and /metrics. Read from the hub,
/// the catalog, the sources and the derivations in one place, so that a figure (a reader's
/// lag, a group's members) is computed once and has one name wherever it is shown.
struct StreamViews: Sendable {
    let hubs: StreamHubs
    let store: EventStore
    let sources: SourceRegistry?
    let derivations: DerivationRegistry?

    func describe(_ info: StreamInfo) -> StreamDescription {
        let hub = hubs[info.name]
        var description = StreamDescription(
            name: info.name, capacity: info.config.capacity, maxBytes: info.config.maxBytes,
            maxAge: info.config.maxAge, createdAt: Timestamp.format(info.createdAt),
            firstSeq: info.firstSequence, lastSeq: info.lastSequence, count: info.eventCount,
            bytes: info.byteCount, terminal: info.terminal?.kind, terminalMessage: info.terminal?.message,
            subscribers: hub?.subscriberCount ?? 0, source: sources?.describe(info.name), keepUnacked: info.config.keepUnacked,
            delivered: hub?.delivered ?? 0, derivation: derivations?.describe(info.name))
        description.eventTTL = info.config.eventTTL
        description.scheduled = info.scheduledCount
        description.nextDue = info.nextDue.map { Timestamp.format(millis: $0) }
        description.compaction = info.config.compaction.map {
            CompactionDescription(
                tombstoneRetention: $0.tombstoneRetention, lastRun: info.compactedAt.map { Timestamp.format(millis: $0) },
                removed: info.compactedEvents)
        }
        return description
    }

    /// The stream's durable consumers, by name (as the store lists them).
    func consumers(of info: StreamInfo) -> [ConsumerDescription] {
        (store.consumers(of: info.name) ?? []).map { consumer in
            ConsumerDescription(
                name: consumer.name, ackedSeq: consumer.ackedSequence, lag: lag(last: info.lastSequence, position: consumer.ackedSequence),
                createdAt: Timestamp.format(consumer.createdAt), updatedAt: Timestamp.format(consumer.updatedAt))
        }
    }

    /// The stream's consumer groups, by name; a member is one holding events (on any
    /// daemon) or connected to this one.
    func groups(of info: StreamInfo, now: Int64 = Timestamp.millis(Date())) -> [GroupDescription] {
        (store.groups(of: info.name) ?? [:]).values.sorted { $0.name < $1.name }.map { group in
            let holding = Set(group.pending.values.compactMap(\.member))
            let members = holding.union(hubs.groupMembers.connected(group: group.name, of: info.name)).sorted()
            return GroupDescription(
                name: group.name, stream: info.name, ackWait: Double(group.settings.ackWaitMillis) / 1000,
                maxDeliver: group.settings.maxDeliver, deadLetter: group.settings.deadLetter, members: members,
                pending: group.pending.count, delivered: group.delivered, redelivered: group.redelivered, deadLettered: group.deadLettered,
                oldestPendingMs: group.pending.values.map(\.firstDelivered).min().map { max(0, now - $0) },
                deliveredSeq: group.deliveredSequence, lag: lag(last: info.lastSequence, position: group.deliveredSequence))
        }
    }
}
