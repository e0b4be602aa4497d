import Hummingbird
import ReplayProtocol
import ReplayStore

/// The one table of what a store error means at each door: its wire code (a stable word a
/// program matches, `-ERR <code> <message>`), its HTTP status, and its message, the
/// case's `description`, written beside the case in the store in storage's own words.
/// As nats-server's errors.json, every case is in one place: a new case is a compile
/// error here until it has both.
extension StoreError {
    struct Meaning {
        let code: ReplayError.Code
        let status: HTTPResponse.Status
    }

    var meaning: Meaning {
        switch self {
        case .unknownStream: Meaning(code: .unknownStream, status: .notFound)
        case .streamExists: Meaning(code: .streamExists, status: .conflict)
        case .invalidStreamName: Meaning(code: .invalidName, status: .badRequest)
        case .invalidConfig: Meaning(code: .invalidConfig, status: .badRequest)
        case .invalidFork: Meaning(code: .invalidConfig, status: .badRequest)
        case .forkOfDeletedStream: Meaning(code: .unknownStream, status: .conflict)
        case .terminated: Meaning(code: .terminated, status: .conflict)
        case .wrongLastSequence: Meaning(code: .wrongLastSeq, status: .conflict)
        case .writerSequenceRegression: Meaning(code: .wrongLastSeq, status: .conflict)
        case .staleEpoch: Meaning(code: .staleEpoch, status: .forbidden)
        case .producerSequenceGap: Meaning(code: .pseqGap, status: .badRequest)
        // A retry of something stored too long ago to say where: nothing new was stored.
        case .forgottenDuplicate: Meaning(code: .duplicatePseq, status: .noContent)
        case .unknownConsumer: Meaning(code: .unknownConsumer, status: .notFound)
        case .invalidAck: Meaning(code: .invalidAck, status: .badRequest)
        case .unknownGroup: Meaning(code: .unknownGroup, status: .notFound)
        case .groupConflict: Meaning(code: .groupConflict, status: .conflict)
        case .derivationConflict: Meaning(code: .derivationConflict, status: .conflict)
        case .storageFull: Meaning(code: .storageFull, status: .insufficientStorage)
        case .limitReached: Meaning(code: .limitReached, status: .insufficientStorage)
        // A quota of the client's, as JetStream's account limits: not the server's fault.
        case .quotaExceeded: Meaning(code: .forbidden, status: .forbidden)
        case .unavailable: Meaning(code: .storageUnavailable, status: .serviceUnavailable)
        case .closed: Meaning(code: .shuttingDown, status: .serviceUnavailable)
        case .notADatabase, .readOnly, .locked, .newerSchema, .sqlite: Meaning(code: .internal, status: .internalServerError)
        }
    }
}

extension ReplayError {
    /// The wire form of a store error.
    init(_ error: StoreError) {
        self.init(error.meaning.code, error.description)
    }
}

extension HTTPError {
    /// The HTTP form of a store error.
    init(_ error: StoreError) {
        self.init(error.meaning.status, message: error.description)
    }
}

extension HTTPResponse.Status {
    /// RFC 4918's 507, which HTTPTypes does not name.
    static var insufficientStorage: Self { .init(code: 507, reasonPhrase: "Insufficient Storage") }
}
