/// The current event of every key, gathered from a stream's segments newest first (a
/// fork's own events, then its source's): the first time a key is met is its newest
/// event, which is its value unless it is a tombstone (an empty payload).
struct CurrentEvents {
    private var seen: Set<String> = []
    private var sequences: [UInt64] = []

    /// One key's newest event in the segment being read; segments come newest first.
    mutating func add(key: String, sequence: UInt64, payloadBytes: Int) {
        guard seen.insert(key).inserted, payloadBytes > 0 else { return }
        sequences.append(sequence)
    }

    /// The events, in sequence order.
    var ordered: [UInt64] { sequences.sorted() }
}
