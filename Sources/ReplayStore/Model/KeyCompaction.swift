import Foundation

/// A compacted stream's settings: it keeps each key's newest event, as a Kafka topic with
/// `cleanup.policy=compact` does, and compaction (`WriterRules.compact`) removes the events
/// a newer one of the same key superseded. Events without a key are kept: compaction has
/// nothing to judge them by (Kafka refuses them on a compacted topic; here they stay, under
/// the stream's other limits).
public struct KeyCompaction: Sendable, Equatable {
    /// How long a key's tombstone (a keyed event with an empty payload: the key deleted)
    /// stays once it is the key's newest event, in seconds. Readers that were behind see it
    /// meanwhile and drop the key; past it the tombstone goes too, and the key is as if it
    /// had never been published.
    public var tombstoneRetention: TimeInterval

    /// Kafka's `delete.retention.ms` default: a day, long enough for a reader stopped
    /// overnight to learn of a deletion.
    public static let defaultTombstoneRetention: TimeInterval = 86_400

    public init(tombstoneRetention: TimeInterval = Self.defaultTombstoneRetention) {
        self.tombstoneRetention = tombstoneRetention
    }
}
