/// The `event_log` key: one integer, `(stream id << 40) | seq` (see migration 0003). A
/// stream's events are one contiguous range of keys, in sequence order, so every read,
/// trim and delete of a stream is a rowid range.
enum LogRowKey {
    static let sequenceBits: Int64 = 40
    /// The highest sequence number a stream can reach.
    static let maxSequence: UInt64 = (1 << UInt64(sequenceBits)) - 1
    /// The highest stream id the key has room for.
    static let maxStreamID: Int64 = (1 << 23) - 1

    static func key(stream: Int64, sequence: UInt64) -> Int64 {
        (stream << sequenceBits) | Int64(sequence)
    }

    static func sequence(of key: Int64) -> UInt64 {
        UInt64(key & Int64(maxSequence))
    }

    static func stream(of key: Int64) -> Int64 {
        key >> sequenceBits
    }

    /// Every key the stream can have.
    static func range(of stream: Int64) -> ClosedRange<Int64> {
        key(stream: stream, sequence: 0)...key(stream: stream, sequence: maxSequence)
    }
}
