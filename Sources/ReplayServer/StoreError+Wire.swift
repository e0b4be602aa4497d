import Foundation
import ReplayProtocol
import ReplayStore

extension ReplayError {
    /// The wire form of a store error.
    init(_ error: StoreError) {
        let code: Code = switch error {
        case .unknownStream: .unknownStream
        case .streamExists: .streamExists
        case .invalidStreamName: .invalidName
        case .invalidConfig: .invalidConfig
        case .terminated: .terminated
        case .storageFull: .storageFull
        case .limitReached: .limitReached
        case .closed: .shuttingDown
        case .wrongLastSequence: .wrongLastSeq
        case .staleEpoch: .staleEpoch
        case .producerSequenceGap: .pseqGap
        case .forgottenDuplicate: .duplicatePseq
        case .unknownConsumer: .unknownConsumer
        case .invalidAck: .invalidAck
        case .notADatabase, .readOnly, .locked, .newerSchema, .sqlite: .internal
        }
        self.init(code, error.description)
    }
}

extension PublishChecks {
    /// The store's form of a PUB's checks.
    var conditions: AppendConditions {
        AppendConditions(
            expectedLastSequence: expect,
            producer: producer.map { ProducerStamp(id: $0.id, epoch: $0.epoch, sequence: $0.pseq) })
    }
}

extension AtomicEvent {
    var append: AtomicAppend {
        AtomicAppend(stream: stream, payload: Data(payload.readableBytesView), expectedLastSequence: expect)
    }
}
