import ReplayModel

/// Where a stream's events `from...through` are stored: one range of its own rows, or, for
/// a fork, its source's part first (itself possibly a fork) and then its own. Forks share
/// their source's numbering, so the pieces line up without translation.
struct LogSegments {
    struct Segment: Equatable {
        let streamID: Int64
        /// The name of the stream whose rows these are (a fork's source for its inherited
        /// part): its events are hashed under it.
        let stream: String
        let from: UInt64
        let through: UInt64
        /// That stream's chain base as the record the read started from has it (the hash
        /// before its first retained event): the writer's reads check against it; a reader
        /// outside the writer reads it from its own snapshot instead, where retention may
        /// have moved it since.
        let base: EventHash
    }

    let segments: [Segment]

    init(of record: Catalog.Record, from: UInt64, through: UInt64, lookup: (String) -> Catalog.Record?) {
        segments = Self.resolve(record, from: from, through: min(through, LogRowKey.maxSequence), lookup: lookup, depth: 0)
    }

    private init(_ segments: [Segment]) {
        self.segments = segments
    }

    /// Each of `reads` whole through `read`, its events handed to `body`, until the reads
    /// have passed `byteBudget` payload bytes: how many reads were done (`LogDatabase.forEachEvent(eachOf:)`).
    static func readEach(
        _ reads: [LogSegments], byteBudget: Int, _ body: EventVisitor, _ read: (LogSegments, EventVisitor) throws -> Void
    ) rethrows -> Int {
        // Each read's visitor wraps `body` to count its bytes, which Swift allows a
        // non-escaping closure only through `withoutActuallyEscaping`.
        try withoutActuallyEscaping(body) { body in
            var bytes = 0
            for (index, segments) in reads.enumerated() {
                if bytes >= byteBudget { return index }
                try read(segments) { sequence, time, payload, trace, hash, key in
                    bytes += payload.count
                    body(sequence, time, payload, trace, hash, key)
                }
            }
            return reads.count
        }
    }

    /// Event `sequence` of `segment` alone, as a read of its own.
    static func single(_ sequence: UInt64, of segment: Segment) -> LogSegments {
        LogSegments([Segment(streamID: segment.streamID, stream: segment.stream, from: sequence, through: sequence, base: segment.base)])
    }

    private static func resolve(
        _ record: Catalog.Record, from: UInt64, through: UInt64, lookup: (String) -> Catalog.Record?, depth: Int
    ) -> [Segment] {
        guard from <= through else { return [] }
        guard let fork = record.info.fork, depth < 1000, let source = lookup(fork.source) else {
            return [Segment(streamID: record.id, stream: record.info.name, from: from, through: through, base: record.chainBase)]
        }
        var segments: [Segment] = []
        if from <= fork.sequence {
            segments = resolve(source, from: from, through: min(through, fork.sequence), lookup: lookup, depth: depth + 1)
        }
        let own = max(from, fork.sequence + 1)
        if own <= through {
            segments.append(Segment(streamID: record.id, stream: record.info.name, from: own, through: through, base: record.chainBase))
        }
        return segments
    }
}
