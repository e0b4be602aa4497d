import Foundation
import ReplayModel
import ReplaySync

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
    ///
    /// A long stream is checked in `parts` ranges at once (of `eventsPerPart` events at
    /// least), each on a thread: an event is checked against the hash stored with the one
    /// before it, whoever checks that one, so a range needs nothing from the ranges before
    /// it, and the first break of the first broken range is the stream's first. The report
    /// is one thread's, but for events missing at the end of a range: the first of them is
    /// named, as missing, where one thread names the link of the event after them.
    public func verify(
        _ stream: String, through: UInt64? = nil, parts: Int = EventStore.verifyParts,
        eventsPerPart: UInt64 = EventStore.verifyEventsPerPart, pageEvents: Int = 8192, pageBytes: Int = 32 << 20
    ) throws(StoreError) -> ChainReport {
        guard let start = catalog[stream] else { throw .unknownStream(stream) }
        let first = start.info.firstSequence
        let last = min(through ?? .max, start.info.lastSequence)
        let count = last >= first ? last - first + 1 : 0
        let parts = Int(min(UInt64(max(parts, 1)), count / max(eventsPerPart, 1)))
        guard parts > 1 else { return try verify(stream, from: first, through: last, pageEvents: pageEvents, pageBytes: pageBytes) }
        let reports = Locked([Result<ChainReport, StoreError>?](repeating: nil, count: parts))
        DispatchQueue.concurrentPerform(iterations: parts) { part in
            let lower = first + count * UInt64(part) / UInt64(parts)
            let upper = first + count * UInt64(part + 1) / UInt64(parts) - 1
            let report = Result { () throws(StoreError) in
                try verify(stream, from: lower, through: upper, pageEvents: pageEvents, pageBytes: pageBytes)
            }
            reports.withLock { $0[part] = report }
        }
        // In order: a range's error or break is the answer only if every range before it
        // was whole, as when one thread reads them all.
        var whole = ChainReport(stream: stream)
        for report in reports.value {
            whole = whole.followed(by: try report!.get())
            if !whole.isIntact { break }
        }
        return whole
    }

    /// The threads `verify` checks a long stream on: the machine's cores, up to four.
    public static var verifyParts: Int { min(ProcessInfo.processInfo.activeProcessorCount, 4) }
    /// A stream is split only into ranges of at least this many events: a short one is
    /// read on one thread in less time than it takes to start another.
    public static let verifyEventsPerPart: UInt64 = 65_536

    /// `verify` of the events `from` through `last`, on the calling thread. A stream
    /// deleted meanwhile ends with what was found.
    private func verify(
        _ stream: String, from: UInt64, through last: UInt64, pageEvents: Int, pageBytes: Int
    ) throws(StoreError)
        -> ChainReport
    {
        var report = ChainReport(stream: stream)
        var lastHash: EventHash?
        var from = from
        while from <= last {
            guard let record = catalog[stream] else { return report.with(lastHash) }
            let segments = LogSegments(of: record, from: from, through: last) { catalog[$0] }
            var found = 0
            do {
                try log.forEachEvent(segments, limit: pageEvents, byteBudget: pageBytes, includingExpired: true) {
                    sequence, _, payload, _, hash, _ in
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
                if let now, now.info.config.capacity != 0, now.info.firstSequence <= last, from <= last,
                    try !endsInAHole(now, from: max(from, now.info.firstSequence), through: last)
                {
                    report.broken = ChainReport.Break(sequence: max(from, now.info.firstSequence), expected: "an event", found: "none")
                }
                return report.with(lastHash)
            }
        }
        return report.with(lastHash)
    }
}

extension EventStore {
    /// Whether `from...through` is one hole: events removed from inside the window, not missing.
    fileprivate func endsInAHole(_ record: Catalog.Record, from: UInt64, through: UInt64) throws(StoreError) -> Bool {
        guard record.info.removedEvents > 0, let hole = try log.hole(of: record.id, containing: from) else { return false }
        return hole.through >= through
    }
}

extension ChainReport {
    fileprivate func with(_ lastHash: EventHash?) -> ChainReport {
        var report = self
        report.lastHash = lastHash?.hex
        return report
    }

    /// This report of a range, then `later`'s, of the range after it: one report of both.
    /// A broken range is the end of the report.
    fileprivate func followed(by later: ChainReport) -> ChainReport {
        guard isIntact else { return self }
        guard events > 0 else { return later }
        var both = self
        if later.events > 0 {
            both.last = later.last
            both.lastHash = later.lastHash
        }
        both.events += later.events
        both.bytes += later.bytes
        both.broken = later.broken
        return both
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
