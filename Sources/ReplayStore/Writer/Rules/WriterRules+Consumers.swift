import Foundation

/// Durable consumers: part of their stream's record, moved as working copies (the last
/// acknowledgement of a batch wins), written in `finish` with the stream's row.
extension WriterRules {
    /// A durable consumer's start, created after `initialNext(info) - 1` on first use.
    mutating func openConsumer(
        _ consumer: String, of name: String, initialNext: (StreamInfo) -> UInt64
    ) throws -> Result<ConsumerStart, StoreError> {
        guard let index = try touch(name) else { return .failure(.unknownStream(name)) }
        let info = streams[index].record.info
        if streams[index].record.consumers[consumer] == nil {
            let acked = min(info.lastSequence, max(initialNext(info), 1) - 1)
            streams[index].record.consumers[consumer] = ConsumerInfo(name: consumer, ackedSequence: acked, createdAt: time, updatedAt: time)
            streams[index].consumersWritten.insert(consumer)
            streams[index].consumersRemoved.remove(consumer)
        }
        return .success(ConsumerStart(ackedSequence: streams[index].record.consumers[consumer]!.ackedSequence, lastSequence: info.lastSequence))
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
