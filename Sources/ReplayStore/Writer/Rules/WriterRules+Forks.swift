import Foundation
import ReplayModel

/// Forks: a stream that starts as another's prefix. Its row names its source and fork
/// point; its reads are stitched from the source's rows (`LogSegments`), never copied.
extension WriterRules {
    /// Creates the fork `name` of `request.source`: a row that inherits the source's events
    /// up to the fork point, read from the source, never copied. A sub-offset inside an
    /// event makes that event's first bytes the fork's own first event.
    mutating func createFork(
        _ name: String, of request: ForkRequest, _ config: StreamConfig
    ) throws -> Result<Int, StoreError> {
        guard let source = try record(request.source) else { return .failure(.unknownStream(request.source)) }
        guard !source.info.isSoftDeleted else { return .failure(.forkOfDeletedStream(request.source)) }
        let tail = source.info.lastSequence
        let anchor = request.sequence ?? tail
        guard anchor <= tail else {
            return .failure(.invalidFork("stream '\(request.source)' ends at sequence \(tail); it cannot be forked after \(anchor)"))
        }
        var inherited = anchor
        var prefix: Data?
        if request.subOffset > 0 {
            guard anchor < tail else { return .failure(.invalidFork("a sub-offset needs an event after the fork offset")) }
            if request.subOffsetCountsEvents {
                guard request.subOffset <= tail - anchor else {
                    return .failure(.invalidFork("a sub-offset of \(request.subOffset) messages passes the end of stream '\(request.source)'"))
                }
                inherited = anchor + request.subOffset
            } else {
                var next = Data()
                let segments = LogSegments(of: source, from: anchor + 1, through: anchor + 1) { name in
                    indexByName[name].map { streams[$0].record } ?? catalog[name]
                }
                do {
                    try db.forEachEvent(segments, limit: 1, byteBudget: .max, expiredBy: millis) { _, _, payload, _, _, _ in
                        next = Data(payload)
                    }
                } catch let error as StoreError {
                    // A corrupt event refuses the fork, not the writer's whole batch.
                    guard case .corruptEvent = error else { throw error }
                    CorruptionReports.note(error)
                    return .failure(error)
                }
                guard request.subOffset <= UInt64(next.count) else {
                    return .failure(.invalidFork("a sub-offset of \(request.subOffset) bytes passes the next event (\(next.count) bytes)"))
                }
                if request.subOffset == UInt64(next.count) { inherited = anchor + 1 } else { prefix = next.prefix(Int(request.subOffset)) }
            }
        }
        let fork = StreamFork(source: request.source, sequence: inherited, requestedSequence: anchor, requestedSubOffset: request.subOffset)
        let index = try insertStream(name, config, fork: (fork, source.id))
        streams[index].record.info.lastSequence = inherited
        streams[index].record.info.firstSequence = min(max(source.info.firstSequence, 1), inherited + 1)
        streams[index].record.lastTime = source.lastTime
        // The fork's chain goes on from its source's at the fork point: its own events
        // follow the hash of the last event it inherits.
        let forkPoint = try hash(at: inherited, of: source)
        streams[index].record.chainHead = forkPoint
        streams[index].record.chainBase = forkPoint
        if let prefix { _ = try append(prefix, to: index) }
        return .success(index)
    }

    /// The chain's hash after `source`'s event `sequence` (which may be stored in its own
    /// source's rows): the event's stored hash, else the stream's base or head where the
    /// event is no longer (or never was) stored.
    private func hash(at sequence: UInt64, of source: Catalog.Record) throws -> EventHash {
        guard sequence > 0 else { return .zero }
        if sequence == source.info.lastSequence { return source.chainHead }
        let segments = LogSegments(of: source, from: sequence, through: sequence) { name in
            indexByName[name].map { streams[$0].record } ?? catalog[name]
        }
        for segment in segments.segments {
            if let stored = try db.eventHash(stream: segment.streamID, sequence: sequence) { return stored }
        }
        // Retention removed it: only the one just before the first retained is known.
        return sequence + 1 == source.info.firstSequence ? source.chainBase : .zero
    }
}
