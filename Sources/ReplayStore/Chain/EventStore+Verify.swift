import ReplayModel

extension EventStore {
    /// Recomputes `stream`'s hash chain over every retained event, while the daemon runs:
    /// page by page, each page one read snapshot beside the writer (never a transaction
    /// held across the whole stream, which would keep SQLite's WAL from being checkpointed
    /// for as long), each page's first event checked against what its snapshot holds
    /// before it, so retention moving on between pages is followed. Blocking.
    ///
    /// Reports the first event that does not match, or the first one missing: a stream
    /// whose row says it keeps events past the last one found.
    /// `through`: the last event to check (the stream's last by default).
    public func verify(
        _ stream: String, through: UInt64? = nil, pageEvents: Int = 8192, pageBytes: Int = 32 << 20
    ) throws(StoreError) -> ChainReport {
        guard let start = catalog[stream] else { throw .unknownStream(stream) }
        let last = min(through ?? .max, start.info.lastSequence)
        var report = ChainReport(stream: stream)
        var lastHash: EventHash?
        var from = start.info.firstSequence
        while from <= last {
            // A deleted stream's verification ends with what it found.
            guard let record = catalog[stream] else { return report.with(lastHash) }
            let segments = LogSegments(of: record, from: from, through: last) { catalog[$0] }
            var found = 0
            do {
                try log.forEachEvent(segments, limit: pageEvents, byteBudget: pageBytes) { sequence, _, payload, _, hash in
                    report.checked(sequence, bytes: payload.count)
                    lastHash = hash.flatMap(EventHash.init(bytes:))
                    from = sequence + 1
                    found += 1
                }
            } catch {
                guard case .corruptEvent(_, let sequence, let expected, let stored) = error else { throw error }
                CorruptionReports.note(error)
                report.broken = ChainReport.Break(sequence: sequence, expected: expected, found: stored)
                return report.with(lastHash)
            }
            if found == 0 {
                // Nothing left to read: retention took the rest, or rows were removed
                // under the daemon (its row still says they are kept).
                let now = catalog[stream]
                if let now, now.info.config.capacity != 0, now.info.firstSequence <= last, from <= last {
                    report.broken = ChainReport.Break(sequence: max(from, now.info.firstSequence), expected: "an event", found: "none")
                }
                return report.with(lastHash)
            }
        }
        return report.with(lastHash)
    }
}

extension ChainReport {
    fileprivate func with(_ lastHash: EventHash?) -> ChainReport {
        var report = self
        report.lastHash = lastHash?.hex
        return report
    }
}

/// A stream's hash chain where it ends: the hash after its last event.
public struct ChainHead: Sendable, Equatable {
    public let stream: String
    public let sequence: UInt64
    public let hash: EventHash
    /// The time (ms) of the last event.
    public let millis: Int64
}

extension EventStore {
    /// Every stream's chain head as last committed (streams with no hashed event and
    /// soft-deleted ones left out). Memory only.
    public var chainHeads: [ChainHead] {
        catalog.all.compactMap { record in
            guard record.chainHead != .zero, !record.info.isSoftDeleted else { return nil }
            return ChainHead(stream: record.info.name, sequence: record.info.lastSequence, hash: record.chainHead, millis: record.lastTime)
        }
    }
}
