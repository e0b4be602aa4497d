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
        case .notADatabase, .readOnly, .locked, .newerSchema, .sqlite: .internal
        }
        self.init(code, error.description)
    }
}
