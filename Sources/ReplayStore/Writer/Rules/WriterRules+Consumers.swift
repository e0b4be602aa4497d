import Foundation
import ReplayModel

/// Durable consumers: part of their stream's record, moved as working copies (the last
/// acknowledgement of a batch wins), written in `finish` with the stream's row.
extension WriterRules {
    /// A durable consumer's start, created at `first` on first use.
    mutating func openConsumer(
        _ consumer: String, of name: String, first: FirstPosition
    ) throws -> Result<ConsumerStart, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        let info = streams[index].record.info
        if streams[index].record.consumers[consumer] == nil {
            let acked = min(info.lastSequence, max(try resolve(first, of: streams[index].record), 1) - 1)
            streams[index].record.consumers[consumer] = ConsumerInfo(name: consumer, ackedSequence: acked, createdAt: time, updatedAt: time)
            streams[index].consumersWritten.insert(consumer)
            streams[index].consumersRemoved.remove(consumer)
        }
        return .success(ConsumerStart(ackedSequence: streams[index].record.consumers[consumer]!.ackedSequence, lastSequence: info.lastSequence))
    }

    /// The first position wanted: from the bounds, or the first retained event at or after
    /// a time, searched in this transaction (so this batch's earlier appends count).
    func resolve(_ first: FirstPosition, of record: Catalog.Record) throws -> UInt64 {
        let info = record.info
        switch first {
        case .next(let initialNext): return initialNext(info)
        case .since(let time):
            guard info.firstSequence <= info.lastSequence else { return info.lastSequence + 1 }
            return try db.firstSequence(of: record.id, in: info.firstSequence...info.lastSequence, atOrAfter: Timestamp.millis(time))
        }
    }

    /// Moves a consumer forward to `sequence` (cumulative: never back, never past the end).
    mutating func acknowledge(_ sequence: UInt64, consumer: String, of name: String) throws -> Result<Void, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        guard let current = streams[index].record.consumers[consumer] else {
            return .failure(.unknownConsumer(stream: name, name: consumer))
        }
        let last = streams[index].record.info.lastSequence
        guard sequence <= last else {
            return .failure(.invalidAck("\(sequence) is beyond the last sequence number of '\(name)', \(last)"))
        }
        guard sequence >= current.ackedSequence else {
            return .failure(
                .invalidAck(
                    "consumer '\(consumer)' already acknowledged up to \(current.ackedSequence); acknowledgements are cumulative and never go back"))
        }
        // Acknowledgements coalesce: the row is written once per transaction, the last wins.
        streams[index].record.consumers[consumer]?.ackedSequence = sequence
        streams[index].record.consumers[consumer]?.updatedAt = time
        streams[index].consumersWritten.insert(consumer)
        return .success(())
    }

    mutating func deleteConsumer(_ consumer: String, of name: String) throws -> Result<Void, StoreError> {
        guard let index = try touch(name), streams[index].record.consumers.removeValue(forKey: consumer) != nil else {
            return .failure(.unknownConsumer(stream: name, name: consumer))
        }
        streams[index].consumersWritten.remove(consumer)
        streams[index].consumersRemoved.insert(consumer)
        return .success(())
    }
}
