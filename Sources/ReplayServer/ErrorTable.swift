import Hummingbird
import ReplayProtocol
import ReplayStore

/// The one table of what an error means at each door. As nats-server's errors.json, every
/// meaning is in one place:
/// - a store error: its wire code (a stable word a program matches, `-ERR <code>
///   <message>`), its HTTP status, and the headers the protocol gives with it; its message
///   is the case's `description`, written beside the case in the store in storage's own
///   words. A new case is a compile error here until it has all of them.
/// - the HTTP door's own errors (a bad header, no such route, a rate), and the
///   subscription protocol's (`FENCED`, `ALREADY_CLAIMED`): `HTTPProblem.Code`.
/// Over HTTP a code is the socket's word in capitals where the meaning is the same
/// (`unknown_stream` is `UNKNOWN_STREAM`), as the subscription protocol writes its own.
extension StoreError {
    struct Meaning {
        let code: ReplayError.Code
        let status: HTTPResponse.Status
        var headers: HTTPFields = [:]
    }

    var meaning: Meaning {
        switch self {
        case .unknownStream: Meaning(code: .unknownStream, status: .notFound)
        case .streamExists: Meaning(code: .streamExists, status: .conflict)
        case .invalidStreamName: Meaning(code: .invalidName, status: .badRequest)
        case .invalidConfig: Meaning(code: .invalidConfig, status: .badRequest)
        case .invalidFork: Meaning(code: .invalidConfig, status: .badRequest)
        case .backupRefused: Meaning(code: .invalidConfig, status: .badRequest)
        case .forkOfDeletedStream: Meaning(code: .unknownStream, status: .conflict)
        // The Durable Streams protocol's closed stream: 409 with `Stream-Closed: true` (the
        // HTTP door adds the stream's tail, which only it knows).
        case .terminated: Meaning(code: .terminated, status: .conflict, headers: [.streamClosed: "true"])
        case .wrongLastSequence: Meaning(code: .wrongLastSeq, status: .conflict)
        case .writerSequenceRegression: Meaning(code: .wrongLastSeq, status: .conflict)
        case .staleEpoch(_, _, _, let current): Meaning(code: .staleEpoch, status: .forbidden, headers: [.producerEpoch: String(current)])
        // The protocol's two statuses: a new producer or a new epoch must start at 0, so
        // starting above it is a bad request; a gap later is a conflict that says where.
        case .producerSequenceGap(_, _, let expected, _) where expected == 0: Meaning(code: .pseqGap, status: .badRequest)
        case .producerSequenceGap(_, _, let expected, let received):
            Meaning(
                code: .pseqGap, status: .conflict,
                headers: [.producerExpectedSeq: String(expected), .producerReceivedSeq: String(received)])
        // A retry of something stored too long ago to say where: nothing new was stored.
        case .forgottenDuplicate: Meaning(code: .duplicatePseq, status: .noContent)
        case .unknownConsumer: Meaning(code: .unknownConsumer, status: .notFound)
        case .invalidAck: Meaning(code: .invalidAck, status: .badRequest)
        case .unknownGroup: Meaning(code: .unknownGroup, status: .notFound)
        case .unknownScheduled: Meaning(code: .unknownScheduled, status: .notFound)
        case .groupConflict: Meaning(code: .groupConflict, status: .conflict)
        case .derivationConflict: Meaning(code: .derivationConflict, status: .conflict)
        case .storageFull: Meaning(code: .storageFull, status: .insufficientStorage)
        case .limitReached: Meaning(code: .limitReached, status: .insufficientStorage)
        // A quota of the client's, as JetStream's account limits: not the server's fault.
        case .quotaExceeded: Meaning(code: .forbidden, status: .forbidden)
        case .unavailable: Meaning(code: .storageUnavailable, status: .serviceUnavailable)
        case .closed: Meaning(code: .shuttingDown, status: .serviceUnavailable)
        // The daemon's own data is wrong, not the request: a server error that names it.
        case .corruptEvent: Meaning(code: .corruptEvent, status: .internalServerError)
        case .notADatabase, .readOnly, .locked, .newerSchema, .sqlite: Meaning(code: .internal, status: .internalServerError)
        }
    }
}

extension StoreError {
    /// The frame that stops a socket subscription (or a group member) on this error, if
    /// it is one that names what it stopped at (a corrupt event); `nil` for the errors that
    /// mean the store itself is closing, after which nothing is sent.
    func subscriptionFrame(stream: String, sid: String) -> ServerFrame? {
        guard case .corruptEvent = self else { return nil }
        return .subscriptionError(stream: stream, sid: sid, error: ReplayError(meaning.code, description))
    }
}

extension ReplayError.Code {
    /// The HTTP status of an error met in the daemon's own words (a derivation refused, a
    /// filter that does not compile), where no store error says more.
    var status: HTTPResponse.Status {
        switch self {
        case .badCommand, .unknownCommand, .lineTooLong, .badFrame, .invalidName, .invalidConfig, .invalidAck: .badRequest
        case .payloadTooLarge: .contentTooLarge
        case .unknownStream, .unknownSubscription, .unknownConsumer, .unknownGroup, .unknownKey, .unknownScheduled: .notFound
        case .streamExists, .terminated, .duplicateSubscription, .wrongLastSeq, .pseqGap, .groupConflict, .derivationConflict: .conflict
        case .forbidden, .staleEpoch: .forbidden
        case .duplicatePseq: .noContent
        case .tooManySubscriptions, .tooManyConnections, .rateLimited: .tooManyRequests
        case .storageFull, .limitReached: .insufficientStorage
        case .storageUnavailable, .shuttingDown: .serviceUnavailable
        case .internal, .corruptEvent: .internalServerError
        }
    }
}

extension HTTPProblem {
    /// An HTTP error's code: the socket's wire code in capitals where the meaning is the
    /// same, or one of the door's own below.
    struct Code: RawRepresentable, Hashable, Sendable {
        let rawValue: String
        init(rawValue: String) { self.rawValue = rawValue }
        init(_ wire: ReplayError.Code) { rawValue = wire.rawValue.uppercased() }

        /// A header, a query parameter or a body the door cannot take.
        static let invalidRequest = Self(rawValue: "INVALID_REQUEST")
        /// No route of this server has that path (a stream's path that names no stream is
        /// `UNKNOWN_STREAM`).
        static let notFound = Self(rawValue: "NOT_FOUND")
        static let methodNotAllowed = Self(rawValue: "METHOD_NOT_ALLOWED")
        /// A request whose head did not arrive in time.
        static let requestTimeout = Self(rawValue: "REQUEST_TIMEOUT")
        /// A soft-deleted stream, kept only for its forks (410).
        static let streamDeleted = Self(rawValue: "STREAM_DELETED")
        /// An append whose Content-Type is not the stream's.
        static let contentTypeMismatch = Self(rawValue: "CONTENT_TYPE_MISMATCH")
        static let invalidOffset = Self(rawValue: "INVALID_OFFSET")
        /// A read from before the stream's first retained event (410, with where it starts).
        static let notRetained = Self(rawValue: "NOT_RETAINED")
        /// No token, or one that is not accepted (401).
        static let unauthorized = Self(rawValue: "UNAUTHORIZED")
        // The subscription protocol's.
        static let subscriptionNotFound = Self(rawValue: "SUBSCRIPTION_NOT_FOUND")
        static let subscriptionExists = Self(rawValue: "SUBSCRIPTION_ALREADY_EXISTS")
        static let fenced = Self(rawValue: "FENCED")
        static let alreadyClaimed = Self(rawValue: "ALREADY_CLAIMED")
        static let noPendingWork = Self(rawValue: "NO_PENDING_WORK")
        static let tokenInvalid = Self(rawValue: "TOKEN_INVALID")
        static let tokenExpired = Self(rawValue: "TOKEN_EXPIRED")
        static let webhookURLRejected = Self(rawValue: "WEBHOOK_URL_REJECTED")
        /// A subscription changed by other requests, or other daemons, under this one
        /// more times than it tries again: retry.
        static let busy = Self(rawValue: "BUSY")
    }

    /// A store error, at the HTTP door.
    init(_ error: StoreError) {
        let meaning = error.meaning
        self.init(meaning.status, Code(meaning.code), error.description, headers: meaning.headers)
    }

    /// An error in the daemon's own words, at the HTTP door.
    init(_ error: ReplayError) {
        self.init(error.code.status, Code(error.code), error.message)
    }

    /// Hummingbird's own refusals (no route, a body over its bound, a method the route does
    /// not take), given a code by their status, so that no answer of the door lacks one.
    init(_ error: HTTPError) {
        self.init(status: error.status, message: error.body, headers: error.headers)
    }

    init(status: HTTPResponse.Status, message: String?, headers: HTTPFields) {
        let code: Code =
            switch status {
            case .badRequest: .invalidRequest
            case .unauthorized: .unauthorized
            case .forbidden: Code(.forbidden)
            case .notFound: .notFound
            case .methodNotAllowed: .methodNotAllowed
            case .requestTimeout: .requestTimeout
            case .contentTooLarge: Code(.payloadTooLarge)
            case .tooManyRequests: Code(.rateLimited)
            case .serviceUnavailable: Code(.shuttingDown)
            default: status.kind == .clientError ? .invalidRequest : Code(.internal)
            }
        self.init(status, code, message ?? status.reasonPhrase, headers: headers)
    }

    /// 400: a header, a parameter or a body the door cannot take, and why.
    static func invalid(_ message: String) -> Self { Self(.badRequest, .invalidRequest, message) }

    /// 413: over `--max-payload`, or a route's own bound.
    static func tooLarge(_ message: String) -> Self { Self(.contentTooLarge, Code(.payloadTooLarge), message) }

    /// 404: no stream of that name (or none the principal may see).
    static func unknownStream(_ message: String) -> Self { Self(.notFound, Code(.unknownStream), message) }

    /// 400: not a stream's name.
    static func invalidName(_ message: String) -> Self { Self(.badRequest, Code(.invalidName), message) }

    /// 403: the principal may not do this.
    static func forbidden(_ message: String, headers: HTTPFields = [:]) -> Self { Self(.forbidden, Code(.forbidden), message, headers: headers) }

    /// 401, with the challenge a client answers with a bearer token.
    static func unauthorized(_ message: String) -> Self {
        Self(.unauthorized, .unauthorized, message, headers: [.wwwAuthenticate: "Bearer realm=\"replay\""])
    }

    /// 503 for a subscription that other requests or other daemons kept changing: retry.
    static func busy(_ message: String) -> Self { Self(.serviceUnavailable, .busy, message) }

    /// 500: something the daemon did not expect, in its words.
    static func `internal`(_ message: String) -> Self { Self(.internalServerError, Code(.internal), message) }

    static func notFound(subscription id: String) -> Self { Self(.notFound, .subscriptionNotFound, "no subscription named '\(id)'") }
    static let fenced = Self(.conflict, .fenced, "the wake's generation is stale: another wake has replaced it, or it was finished")
    static func invalidOffset(_ message: String) -> Self { Self(.conflict, .invalidOffset, message) }
}

extension ReplayError {
    /// The wire form of a store error.
    init(_ error: StoreError) {
        self.init(error.meaning.code, error.description)
    }
}

extension HTTPResponse.Status {
    /// RFC 4918's 507, which HTTPTypes does not name.
    static var insufficientStorage: Self { .init(code: 507, reasonPhrase: "Insufficient Storage") }
}
