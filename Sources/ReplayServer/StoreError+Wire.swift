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
        case .invalidConfig, .invalidFork: .invalidConfig
        case .forkOfDeletedStream: .unknownStream
        case .terminated: .terminated
        case .storageFull: .storageFull
        case .unavailable: .storageUnavailable
        case .limitReached: .limitReached
        case .closed: .shuttingDown
        case .wrongLastSequence, .writerSequenceRegression: .wrongLastSeq
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

extension AtomicEvent {
    var append: AtomicAppend {
        AtomicAppend(stream: stream, payload: Data(payload.readableBytesView), expectedLastSequence: expect)
    }
}
