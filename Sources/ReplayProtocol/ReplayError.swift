/// An error as it travels on the wire: `-ERR <code> <message>`.
///
/// Codes are stable words a program can match; messages are for people and say what to do.
public struct ReplayError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        // Framing and syntax.
        case badCommand = "bad_command"
        case unknownCommand = "unknown_command"
        case lineTooLong = "line_too_long"
        case payloadTooLarge = "payload_too_large"
        case badFrame = "bad_frame"
        // Streams and subscriptions.
        case unknownStream = "unknown_stream"
        case streamExists = "stream_exists"
        case invalidName = "invalid_name"
        case invalidConfig = "invalid_config"
        case terminated = "terminated"
        case duplicateSubscription = "duplicate_sid"
        case unknownSubscription = "unknown_sid"
        case tooManySubscriptions = "too_many_subscriptions"
        case forbidden = "forbidden"
        // Guarantees.
        case wrongLastSeq = "wrong_last_seq"
        case staleEpoch = "stale_epoch"
        case pseqGap = "pseq_gap"
        case duplicatePseq = "duplicate_pseq"
        case unknownConsumer = "unknown_consumer"
        case invalidAck = "invalid_ack"
        case unknownGroup = "unknown_group"
        case groupConflict = "group_conflict"
        case derivationConflict = "derivation_conflict"
        /// `GET`: no retained event of the stream has the key, or its newest is a tombstone.
        case unknownKey = "unknown_key"
        /// `UNSCHEDULE`: the stream has no pending scheduled event of that id (it was
        /// appended, cancelled, or never was).
        case unknownScheduled = "unknown_scheduled"
        // The server.
        case storageFull = "storage_full"
        /// The shared database (PostgreSQL) cannot be reached: nothing was committed; retry.
        case storageUnavailable = "storage_unavailable"
        /// A limit of the store's layout: stream ids or a stream's sequence numbers.
        case limitReached = "limit_reached"
        /// A stored event failed its hash chain's check (changed after it was written): it
        /// is not sent. The message starts `stream=<name> seq=<n>`.
        case corruptEvent = "corrupt_event"
        case shuttingDown = "shutting_down"
        case tooManyConnections = "too_many_connections"
        /// The connection went over its request or byte rate (`--rate-limit-requests`,
        /// `--rate-limit-bytes`): the command was not run; its message says when to retry.
        case rateLimited = "rate_limited"
        case `internal` = "internal"
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// After these the byte stream cannot be resynchronised: the server sends the error,
    /// then closes the connection.
    public var isFatal: Bool {
        code == .lineTooLong || code == .badFrame
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The message as the rest of a line (`-ERR`, `ERROR`): line breaks become spaces.
    var oneLineMessage: String {
        message.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
    }
}
